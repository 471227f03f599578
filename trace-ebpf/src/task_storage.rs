//! Task-local storage (`BPF_MAP_TYPE_TASK_STORAGE`): a value that lives in the task
//! itself. Looking it up is a pointer walk from the current task, not a hash; there is no
//! insert or delete per use, the kernel frees it with the task, and it stays with a
//! thread whose number changes (a non-leader exec takes its leader's tid).
//!
//! aya-ebpf 0.2 defines the BTF map of the other local storages but not this one; the
//! definition below has the layout its `btf_map_def!` gives them (the loader reads the
//! map's type, key, value and flags from the BTF of these fields).

use core::ptr;

use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_LOCAL_STORAGE_GET_F_CREATE, bpf_map_type},
    helpers::generated::{bpf_get_current_task_btf, bpf_task_storage_get},
};

#[repr(C)]
pub struct TaskStorage<T> {
    r#type: *const [i32; bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE as usize],
    key: *const i32,
    value: *const T,
    max_entries: *const [i32; 0],
    map_flags: *const [i32; BPF_F_NO_PREALLOC as usize],
}

// SAFETY: the fields are never dereferenced; they only describe the map in BTF.
unsafe impl<T> Sync for TaskStorage<T> {}

impl<T> TaskStorage<T> {
    pub const fn new() -> Self {
        Self {
            r#type: ptr::null(),
            key: ptr::null(),
            value: ptr::null(),
            max_entries: ptr::null(),
            map_flags: ptr::null(),
        }
    }

    /// The current task's value, created (zeroed) when `create` and it has none yet.
    /// `None`: none and not created, or the kernel could not allocate one (or refused
    /// a lookup nested in another program's on this CPU).
    #[inline(always)]
    pub fn current(&self, create: bool) -> Option<&mut T> {
        let flags = if create {
            BPF_LOCAL_STORAGE_GET_F_CREATE as u64
        } else {
            0
        };
        // SAFETY: the helper takes the map by address and the current task as the
        // kernel's own BTF-typed pointer; it returns the value or null.
        unsafe {
            let task = bpf_get_current_task_btf();
            let value = bpf_task_storage_get(
                ptr::from_ref(self).cast_mut().cast(),
                task.cast(),
                ptr::null_mut(),
                flags,
            );
            value.cast::<T>().as_mut()
        }
    }
}
