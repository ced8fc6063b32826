//! Pure parsers of the cgroup files: `/proc/PID/cgroup`, `/proc/PID/mountinfo`, limits
//! (`max` or a number), `key value` files (`memory.stat`, `memory.events`,
//! `memory.oom_control`).

/// The `(controllers, path)` of each line of a `/proc/PID/cgroup` (`ID:CONTROLLERS:PATH`;
/// v2's line has no controllers).
fn cgroup_lines(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        Some((controllers, path))
    })
}

/// The memory cgroup paths of a `/proc/PID/cgroup`: (v1 `memory` hierarchy, v2 unified).
pub(super) fn cgroup_paths(text: &str) -> (Option<String>, Option<String>) {
    let v2 = cgroup_lines(text)
        .find(|(controllers, _)| controllers.is_empty())
        .map(|(_, path)| path.to_string());
    (v1_cgroup_path(text, "memory"), v2)
}

/// The path of a process in the v1 hierarchy of `controller`.
fn v1_cgroup_path(text: &str, controller: &str) -> Option<String> {
    cgroup_lines(text).find_map(|(controllers, path)| {
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })
}

/// A cgroup hierarchy's mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MountKind {
    /// cgroup2.
    V2,
    /// A v1 hierarchy with the memory controller.
    V1Memory,
}

/// One cgroup mount from `mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mount {
    /// v1 memory or v2.
    pub(super) kind: MountKind,
    /// The cgroup the mount shows at its top (field 4: `/` unless a namespace or bind).
    pub(super) root: String,
    /// Where it is mounted.
    pub(super) point: String,
}

/// The cgroup mounts of a `mountinfo` as (fstype, super options, root, mount point), the
/// last two unescaped. A line is `ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...]`, a
/// separating dash, then `FSTYPE SOURCE SUPER_OPTIONS`.
fn cgroup_mount_lines(text: &str) -> impl Iterator<Item = (&str, &str, String, String)> {
    text.lines().filter_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let (root, point) = (fields.get(3)?, fields.get(4)?);
        let mut rest = after.split(' ');
        let (fstype, _source, options) = (rest.next()?, rest.next()?, rest.next().unwrap_or(""));
        matches!(fstype, "cgroup" | "cgroup2")
            .then(|| (fstype, options, unescape(root), unescape(point)))
    })
}

/// The cgroup2 mounts and the v1 mounts of the memory controller in a `mountinfo`.
pub(super) fn memory_mounts(text: &str) -> Vec<Mount> {
    cgroup_mount_lines(text)
        .filter_map(|(fstype, options, root, point)| {
            let kind = match fstype {
                "cgroup2" => MountKind::V2,
                _ if options.split(',').any(|o| o == "memory") => MountKind::V1Memory,
                _ => return None,
            };
            Some(Mount { kind, root, point })
        })
        .collect()
}

/// `mountinfo` escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let text = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A limit file: `Some(None)` for `max` (no limit), `Some(Some(n))` for a number, `None`
/// for anything else.
pub(super) fn parse_limit(text: &str) -> Option<Option<u64>> {
    match text.trim() {
        "max" => Some(None),
        number => number.parse().ok().map(Some),
    }
}

/// The value of `key` in a `key value` file.
pub(super) fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// A v1 controller's hierarchy for a process: (its mount point, the process's path inside
/// it), from `/proc/PID/cgroup` and `mountinfo`.
pub(super) fn v1_path(
    cgroups: &str,
    mountinfo: &str,
    controller: &str,
) -> Option<(String, String)> {
    let path = v1_cgroup_path(cgroups, controller)?;
    cgroup_mount_lines(mountinfo).find_map(|(fstype, options, root, point)| {
        if fstype != "cgroup" || !options.split(',').any(|o| o == controller) {
            return None;
        }
        let inside = path
            .strip_prefix(root.as_str())
            .unwrap_or(&path)
            .to_string();
        Some((point, inside))
    })
}
