//! The calculator the examples (and the tests) serve and call: typed methods shared by both
//! sides, and a router that answers them.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use sansrpc::method::{Method, NotificationMethod};
use sansrpc::router::Router;
use sansrpc::ErrorObject;
use serde::{Deserialize, Serialize};

/// Two operands, by name (`{"a": 1, "b": 2}`) or by position (`[1, 2]`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Operands {
    pub a: i64,
    pub b: i64,
}

/// `add`: a + b.
pub enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = Operands;
    type Result = i64;
}

/// `add` again, called with positional params: the server decodes both into `Operands`.
pub enum AddPositional {}
impl Method for AddPositional {
    const NAME: &'static str = "add";
    type Params = (i64, i64);
    type Result = i64;
}

/// `subtract`: a - b.
pub enum Subtract {}
impl Method for Subtract {
    const NAME: &'static str = "subtract";
    type Params = Operands;
    type Result = i64;
}

/// `subtract` with positional params.
pub enum SubtractPositional {}
impl Method for SubtractPositional {
    const NAME: &'static str = "subtract";
    type Params = (i64, i64);
    type Result = i64;
}

/// `divide`: a / b, or the application error [`DIVISION_BY_ZERO`].
pub enum Divide {}
impl Method for Divide {
    const NAME: &'static str = "divide";
    type Params = (f64, f64);
    type Result = f64;
}

/// The error code of a division by zero: an application code, outside the reserved range.
pub const DIVISION_BY_ZERO: i64 = 1;

/// `log`: a notification the server records.
pub enum Log {}
impl NotificationMethod for Log {
    const NAME: &'static str = "log";
    type Params = (String,);
}

/// `logged`: what the server recorded from `log` notifications, in arrival order.
pub enum Logged {}
impl Method for Logged {
    const NAME: &'static str = "logged";
    type Params = ();
    type Result = Vec<String>;
}

/// A router answering every method above.
pub fn router() -> Router {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut router = Router::new();
    router.info("calculator", "1.0.0");
    router.method::<Add, _>(|p| Ok(p.a + p.b)).unwrap();
    router.method::<Subtract, _>(|p| Ok(p.a - p.b)).unwrap();
    router
        .method::<Divide, _>(|(a, b)| {
            if b == 0.0 {
                Err(ErrorObject::new(DIVISION_BY_ZERO, "division by zero"))
            } else {
                Ok(a / b)
            }
        })
        .unwrap();
    let record = Arc::clone(&log);
    router
        .notification::<Log, _>(move |(line,)| record.lock().unwrap().push(line))
        .unwrap();
    router
        .method::<Logged, _>(move |()| Ok(log.lock().unwrap().clone()))
        .unwrap();
    router
}
