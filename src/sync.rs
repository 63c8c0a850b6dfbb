//! `Arc` and `AtomicU64` on every target: the standard library's where the target has the
//! atomics, portable-atomic's where it does not (thumbv6m has neither pointer-sized CAS
//! nor 64-bit atomics; thumbv7m has no 64-bit atomics).

#[cfg(target_has_atomic = "ptr")]
pub(crate) use alloc::sync::Arc;
#[cfg(not(target_has_atomic = "ptr"))]
pub(crate) use portable_atomic_util::Arc;

#[cfg(target_has_atomic = "64")]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(not(target_has_atomic = "64"))]
pub(crate) use portable_atomic::AtomicU64;
