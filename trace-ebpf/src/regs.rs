//! Syscall arguments from the `struct pt_regs` that the raw `sys_enter` tracepoint
//! passes, per architecture (the raw tracepoint does not decode them for us).

use aya_ebpf::helpers::bpf_probe_read_kernel;

/// x86_64 `struct pt_regs` (arch/x86/include/asm/ptrace.h): r15 r14 r13 r12 bp bx r11
/// r10 r9 r8 ax cx dx si di …; the syscall ABI passes di si dx r10 r8 r9. One read of
/// the eight slots r10..di (offset 56) covers all six.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    // SAFETY: regs is the tracepoint's kernel pointer; the helper checks the read.
    let r: [u64; 8] = unsafe { bpf_probe_read_kernel(regs.add(56).cast::<[u64; 8]>()) }.ok()?;
    // r = [r10, r9, r8, ax, cx, dx, si, di]
    Some([r[7], r[6], r[5], r[0], r[2], r[1]])
}

/// The code segment of a 32-bit task (i386 on x86_64).
#[cfg(bpf_target_arch = "x86_64")]
const USER32_CS: u64 = 0x23;

/// A 32-bit task (i386 on x86_64): its code segment is the 32-bit user one.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn is_compat(regs: *const u8) -> bool {
    // SAFETY: as above; `cs` is at offset 136.
    unsafe { bpf_probe_read_kernel(regs.add(136).cast::<u64>()) }.is_ok_and(|cs| cs == USER32_CS)
}

/// What sys_enter reads of the registers: whether the task is 32-bit, and with
/// `want_args` a 64-bit call's arguments, in one read of r10..cs (offset 56) where
/// `is_compat` and `syscall_args` took two (a helper call is a tenth of a getppid's
/// time on an AMD host). `None` arguments: not read (not wanted, or a 32-bit task's,
/// which `compat_syscall_args` reads).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn entry_regs(regs: *const u8, want_args: bool) -> (bool, Option<[u64; 6]>) {
    if !want_args {
        return (is_compat(regs), None);
    }
    // SAFETY: as above.
    let Ok(r) = (unsafe { bpf_probe_read_kernel(regs.add(56).cast::<[u64; 11]>()) }) else {
        return (false, None);
    };
    // r = [r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs]
    if r[10] == USER32_CS {
        return (true, None);
    }
    (false, Some([r[7], r[6], r[5], r[0], r[2], r[1]]))
}

/// arm64: the arguments are read later, and only for a target (they are not next to
/// pstate).
#[cfg(not(bpf_target_arch = "x86_64"))]
#[inline(always)]
pub fn entry_regs(regs: *const u8, _want_args: bool) -> (bool, Option<[u64; 6]>) {
    (is_compat(regs), None)
}

/// i386 passes its arguments in bx cx dx si di bp: one read of bp..di (offset 32).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn compat_syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    // SAFETY: as above.
    let r: [u64; 11] = unsafe { bpf_probe_read_kernel(regs.add(32).cast::<[u64; 11]>()) }.ok()?;
    // r = [bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di]
    let low = |v: u64| v & 0xffff_ffff;
    Some([
        low(r[1]),
        low(r[7]),
        low(r[8]),
        low(r[9]),
        low(r[10]),
        low(r[0]),
    ])
}

/// An AArch32 task: the mode bit of pstate (after regs[31], sp and pc).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn is_compat(regs: *const u8) -> bool {
    const PSR_MODE32_BIT: u64 = 0x10;
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel(regs.add(264).cast::<u64>()) }
        .is_ok_and(|p| p & PSR_MODE32_BIT != 0)
}

#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn compat_syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    syscall_args(regs)
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn is_compat(_regs: *const u8) -> bool {
    false
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn compat_syscall_args(_regs: *const u8) -> Option<[u64; 6]> {
    None
}

/// arm64 `struct pt_regs` starts with `u64 regs[31]`; arguments are x0..x5 (x0 is still
/// the first argument at sys_enter; it is overwritten only by the return value).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel(regs.cast::<[u64; 6]>()) }.ok()
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn syscall_args(_regs: *const u8) -> Option<[u64; 6]> {
    None
}

/// The syscall number at sys_exit, where the raw tracepoint passes only the return
/// value: x86_64 keeps it in `orig_ax` (offset 120).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn syscall_nr(regs: *const u8) -> Option<u32> {
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel(regs.add(120).cast::<u64>()) }
        .ok()
        .map(|v| v as u32)
}

/// arm64 keeps it in `syscallno` (s32 after regs[31], sp, pc, pstate and orig_x0).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn syscall_nr(regs: *const u8) -> Option<u32> {
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel(regs.add(280).cast::<i32>()) }
        .ok()
        .map(|v| v as u32)
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn syscall_nr(_regs: *const u8) -> Option<u32> {
    None
}

/// The user stack pointer. After a successful execve it points at the new program's
/// argc, followed by its argv array.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn user_sp(regs: *const u8) -> Option<u64> {
    // SAFETY: as above; `sp` is at offset 152 of x86_64's pt_regs.
    unsafe { bpf_probe_read_kernel(regs.add(152).cast::<u64>()) }.ok()
}

/// arm64: `sp` follows regs[31].
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn user_sp(regs: *const u8) -> Option<u64> {
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel(regs.add(248).cast::<u64>()) }.ok()
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn user_sp(_regs: *const u8) -> Option<u64> {
    None
}

/// Where the signal mask that rt_sigreturn restores lies, at its entry: in the signal
/// frame on the user stack (x86_64: `struct rt_sigframe` less its return address, so
/// `sp` is at `uc`, and `uc.uc_sigmask` is 296 bytes in: uc_flags, uc_link, uc_stack
/// (24) and the 256-byte sigcontext before it). Only a native task's, on x86_64.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn sigreturn_mask(regs: *const u8, nr: u32, compat: bool) -> Option<u64> {
    const RT_SIGRETURN: u32 = 15;
    const UC_SIGMASK: u64 = 296;
    if compat || nr != RT_SIGRETURN {
        return None;
    }
    Some(user_sp(regs)? + UC_SIGMASK)
}

/// arm64: `sp` is at the `struct rt_sigframe` itself (the kernel's
/// arch/arm64/kernel/signal.c reads it from there): a 128-byte siginfo, then `uc`, whose
/// `uc_sigmask` follows uc_flags, uc_link and uc_stack (24): 168 bytes in. A native
/// task's only (an arm32 task's frame is laid out as arm's).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn sigreturn_mask(regs: *const u8, nr: u32, compat: bool) -> Option<u64> {
    const RT_SIGRETURN: u32 = 139;
    const UC_SIGMASK: u64 = 128 + 40;
    if compat || nr != RT_SIGRETURN {
        return None;
    }
    Some(user_sp(regs)? + UC_SIGMASK)
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn sigreturn_mask(_regs: *const u8, _nr: u32, _compat: bool) -> Option<u64> {
    None
}

/// A page fault's instruction pointer, whether it was taken in user mode, and the
/// faulting address, from a perf_event program's context (x86_64: the user code
/// segment's privilege level is 3). Direct context reads: the verifier rewrites them.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn fault_site(ctx: *const aya_ebpf::bindings::bpf_perf_event_data) -> (u64, bool, u64) {
    // SAFETY: the program's own context, read at fields the verifier allows.
    unsafe {
        (
            core::ptr::read_volatile(&raw const (*ctx).regs.rip),
            core::ptr::read_volatile(&raw const (*ctx).regs.cs) & 3 == 3,
            core::ptr::read_volatile(&raw const (*ctx).addr),
        )
    }
}

/// arm64: `pc`, and EL0 in pstate's mode bits.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn fault_site(ctx: *const aya_ebpf::bindings::bpf_perf_event_data) -> (u64, bool, u64) {
    // SAFETY: as above.
    unsafe {
        (
            core::ptr::read_volatile(&raw const (*ctx).regs.pc),
            core::ptr::read_volatile(&raw const (*ctx).regs.pstate) & 0xf == 0,
            core::ptr::read_volatile(&raw const (*ctx).addr),
        )
    }
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn fault_site(ctx: *const aya_ebpf::bindings::bpf_perf_event_data) -> (u64, bool, u64) {
    // SAFETY: as above.
    (0, true, unsafe {
        core::ptr::read_volatile(&raw const (*ctx).addr)
    })
}
