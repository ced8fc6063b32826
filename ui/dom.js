// Small DOM helpers. Text always goes in through textContent, never as HTML.

/**
 * Creates an element. `props`: `class`, `text`, `dataset` (object), `attrs` (object),
 * and anything else is set as a property (`type`, `disabled`, `title`, …).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'attrs') {
      for (const [name, v] of Object.entries(value)) if (v != null) node.setAttribute(name, v);
    } else node[key] = value;
  }
  for (const child of children) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Sets textContent only when it changes (keeps selections and avoids layout work). */
export function setText(node, text) {
  const value = text == null ? '' : String(text);
  if (node.textContent !== value) node.textContent = value;
}

/** Sets or removes an attribute, only when it changes. */
export function setAttr(node, name, value) {
  if (value == null || value === false) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
  } else if (node.getAttribute(name) !== String(value)) {
    node.setAttribute(name, String(value));
  }
}

/**
 * Makes `container`'s children exactly `nodes`, in order, moving as few nodes as possible:
 * nodes already in place are not touched (a focused input inside them keeps its focus).
 */
export function placeChildren(container, nodes) {
  const wanted = new Set(nodes);
  for (const child of Array.from(container.children)) {
    if (!wanted.has(child)) child.remove();
  }
  let cursor = container.firstElementChild;
  for (const node of nodes) {
    if (node === cursor) {
      cursor = cursor.nextElementSibling;
    } else {
      container.insertBefore(node, cursor);
    }
  }
}
