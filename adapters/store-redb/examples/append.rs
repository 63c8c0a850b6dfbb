//! Opens an embedded store in a temporary directory and appends one message: the README's
//! redb snippet, compiled and run.
//!
//! `cargo run -p sansrpc-store-redb --example append`

use sansrpc::RawValue;
use sansrpc_pubsub::store::{RetentionPolicy, Store};
use sansrpc_store_redb::RedbStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let now_ms = 1_700_000_000_000;
    let mut store = RedbStore::open(dir.path().join("sansrpc.redb"), RetentionPolicy::default())?;
    let seq = store.append("orders", now_ms, RawValue::from_json(r#"{"id":1}"#)?)?;
    println!("appended at sequence {seq}");
    assert_eq!(seq, 1);
    Ok(())
}
