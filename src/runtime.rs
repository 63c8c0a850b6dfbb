//! Method subscriptions' sinks and readers shared between a driver's thread and the others
//! ([`subscriptions`], feature `subscriptions`). Everything else a driver on `std` shares
//! is in the `sansrpc-runtime` crate.

#[cfg(feature = "subscriptions")]
pub mod subscriptions;
