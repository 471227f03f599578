//! Syscall arguments from the `struct pt_regs` that the `sys_enter` / `sys_exit`
//! tracepoints pass, per architecture (the raw tracepoint does not decode them for us).
//!
//! The programs are BTF-typed (`tp_btf`): `regs` comes typed by the kernel's BTF, so
//! its slots are plain loads, which the verifier checks against the struct and the JIT
//! guards as a probe read would, without a helper call (on an AMD host, one call of
//! `bpf_probe_read_kernel` less per syscall saved a getppid storm 30–80 ns a call,
//! against 200 ns for the untraced call).

/// The slot of `T` at `offset` bytes into the kernel's `struct pt_regs`.
#[inline(always)]
fn slot<T: Copy>(regs: *const u8, offset: usize) -> T {
    // SAFETY: `regs` is the tracepoint's BTF-typed pt_regs; the verifier checks the
    // offset and size against the kernel's struct, and a faulting load reads as zero.
    unsafe { core::ptr::read_volatile(regs.add(offset).cast::<T>()) }
}

/// x86_64 `struct pt_regs` (arch/x86/include/asm/ptrace.h): r15 r14 r13 r12 bp bx r11
/// r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss, 8 bytes each; the syscall ABI
/// passes di si dx r10 r8 r9.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    Some([
        slot(regs, 112),
        slot(regs, 104),
        slot(regs, 96),
        slot(regs, 56),
        slot(regs, 72),
        slot(regs, 64),
    ])
}

/// A 32-bit task (i386 on x86_64): its code segment is the 32-bit user one (the low
/// 16 bits of the slot: with FRED, the bits above hold other state).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn is_compat(regs: *const u8) -> bool {
    const USER32_CS: u64 = 0x23;
    slot::<u64>(regs, 136) & 0xffff == USER32_CS
}

/// i386 passes its arguments in bx cx dx si di bp.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn compat_syscall_args(regs: *const u8) -> Option<[u64; 6]> {
    let low = |offset: usize| slot::<u64>(regs, offset) & 0xffff_ffff;
    Some([low(40), low(88), low(96), low(104), low(112), low(32)])
}

/// An AArch32 task: the mode bit of pstate (after regs[31], sp and pc).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn is_compat(regs: *const u8) -> bool {
    const PSR_MODE32_BIT: u64 = 0x10;
    slot::<u64>(regs, 264) & PSR_MODE32_BIT != 0
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
    Some([
        slot(regs, 0),
        slot(regs, 8),
        slot(regs, 16),
        slot(regs, 24),
        slot(regs, 32),
        slot(regs, 40),
    ])
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn syscall_args(_regs: *const u8) -> Option<[u64; 6]> {
    None
}

/// The syscall number at sys_exit, where the tracepoint passes only the return value:
/// x86_64 keeps it in `orig_ax` (offset 120).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn syscall_nr(regs: *const u8) -> Option<u32> {
    Some(slot::<u64>(regs, 120) as u32)
}

/// arm64 keeps it in `syscallno` (s32 after regs[31], sp, pc, pstate and orig_x0).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn syscall_nr(regs: *const u8) -> Option<u32> {
    Some(slot::<i32>(regs, 280) as u32)
}

#[cfg(not(any(bpf_target_arch = "x86_64", bpf_target_arch = "aarch64")))]
#[inline(always)]
pub fn syscall_nr(_regs: *const u8) -> Option<u32> {
    None
}

/// The user stack pointer. After a successful execve it points at the new program's
/// argc, followed by its argv array. x86_64: `sp` at offset 152.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
pub fn user_sp(regs: *const u8) -> Option<u64> {
    Some(slot(regs, 152))
}

/// arm64: `sp` follows regs[31].
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
pub fn user_sp(regs: *const u8) -> Option<u64> {
    Some(slot(regs, 248))
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
