//! The Mac's memory-pressure events (libdispatch's `DISPATCH_SOURCE_TYPE_MEMORYPRESSURE`,
//! masks normal, warn and critical): a hint that wakes the sampler before its next tick. Swap
//! and the page counts stay the authority: the kernel notifies one process at a time, by
//! importance, and the event can come a minute after the sysctls show the pressure.
//!
//! The five C calls are made directly (`dispatch/source.h`, libdispatch-1542): the
//! `dispatch2` crate 0.3 offers no safe closure handler either, and would bring `block2` and
//! `objc2` for one source. Elsewhere there is no such event (Linux's pressure triggers are
//! refused by this machine's kernel): nothing is watched. Type-checked for macOS only; never
//! run (no Mac here).

/// Calls `wake` on every memory-pressure event from now on, for the life of the process.
/// False where the OS has no such events or the source could not be made.
pub fn on_memory_pressure(wake: Box<dyn Fn() + Send + Sync>) -> bool {
    imp::watch(wake)
}

#[cfg(target_os = "macos")]
mod imp {
    use std::ffi::c_void;

    /// `struct dispatch_source_type_s` (opaque).
    #[repr(C)]
    struct SourceType {
        _opaque: [u8; 0],
    }

    /// `DISPATCH_MEMORYPRESSURE_NORMAL | WARN | CRITICAL`.
    const ALL_LEVELS: usize = 0x1 | 0x2 | 0x4;
    /// `DISPATCH_QUEUE_PRIORITY_DEFAULT`.
    const DEFAULT_PRIORITY: isize = 0;

    #[link(name = "System", kind = "dylib")]
    extern "C" {
        static _dispatch_source_type_memorypressure: SourceType;
        fn dispatch_get_global_queue(identifier: isize, flags: usize) -> *mut c_void;
        fn dispatch_source_create(
            kind: *const SourceType,
            handle: usize,
            mask: usize,
            queue: *mut c_void,
        ) -> *mut c_void;
        fn dispatch_set_context(object: *mut c_void, context: *mut c_void);
        fn dispatch_source_set_event_handler_f(
            source: *mut c_void,
            handler: Option<extern "C" fn(*mut c_void)>,
        );
        fn dispatch_activate(object: *mut c_void);
    }

    /// The source's handler: `context` is the leaked `wake` of [`watch`].
    extern "C" fn on_event(context: *mut c_void) {
        // SAFETY: `context` is the `Box<Box<dyn Fn>>` leaked by `watch`, never freed.
        let wake = unsafe { &*context.cast::<Box<dyn Fn() + Send + Sync>>() };
        // A panic must not unwind into libdispatch.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wake));
    }

    pub(super) fn watch(wake: Box<dyn Fn() + Send + Sync>) -> bool {
        // SAFETY: global queues exist for the process's life; the type symbol is libdispatch's.
        let source = unsafe {
            let queue = dispatch_get_global_queue(DEFAULT_PRIORITY, 0);
            let kind = std::ptr::addr_of!(_dispatch_source_type_memorypressure);
            dispatch_source_create(kind, 0, ALL_LEVELS, queue)
        };
        if source.is_null() {
            return false;
        }
        // The source and its handler's context live as long as the process.
        let context = Box::into_raw(Box::new(wake)).cast::<c_void>();
        // SAFETY: `source` is a new, inactive source; the context is set before the handler
        // (as `source.h` asks) and outlives it; `activate` starts delivery.
        unsafe {
            dispatch_set_context(source, context);
            dispatch_source_set_event_handler_f(source, Some(on_event));
            dispatch_activate(source);
        }
        true
    }
}

#[cfg(not(target_os = "macos"))]
mod imp {
    pub(super) fn watch(wake: Box<dyn Fn() + Send + Sync>) -> bool {
        drop(wake);
        false
    }
}
