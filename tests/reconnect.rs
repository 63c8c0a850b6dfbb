//! The pure parts of reconnection and keep-alive: lifecycle transitions, the backoff
//! schedule with jitter, the subscription table, and the heartbeat on a virtual clock.

use std::time::Duration;

use proptest::prelude::*;
use sansrpc::connection::keepalive::{Beat, Heard, Heartbeat, HeartbeatConfig};
use sansrpc::ext::reconnect::{
    Backoff, Jitter, PendingPolicy, ReconnectPolicy, Schedule, State, Subscriptions,
};
use sansrpc::{Instant, RawValue};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn lifecycle_transitions_follow_the_seed() {
    use State::*;
    let all = [Connecting, Open, Closing, Closed];
    let allowed = [
        (Connecting, Open),
        (Connecting, Closing),
        (Connecting, Closed),
        (Open, Closing),
        (Open, Closed),
        (Open, Connecting),
        (Closing, Closed),
    ];
    for from in all {
        for to in all {
            assert_eq!(
                from.can_become(to),
                allowed.contains(&(from, to)),
                "{from} → {to}"
            );
        }
    }
    assert!(Open.is_open());
    assert!(!Connecting.is_open() && !Closing.is_open() && !Closed.is_open());
    // Nothing leaves Closed.
    assert!(all.iter().all(|s| !Closed.can_become(*s)));
}

#[test]
fn exponential_backoff_grows_to_its_cap_and_stops_after_max_attempts() {
    let backoff = Backoff::Exponential {
        initial: ms(100),
        max: ms(1000),
        multiplier: 2.0,
        max_attempts: 6,
    };
    let delays: Vec<_> = (1..=7).map(|a| backoff.delay(a)).collect();
    assert_eq!(
        delays,
        [
            Some(ms(100)),
            Some(ms(200)),
            Some(ms(400)),
            Some(ms(800)),
            Some(ms(1000)),
            Some(ms(1000)),
            None
        ]
    );
    assert_eq!(backoff.delay(0), None);
}

#[test]
fn fixed_and_none_strategies() {
    let fixed = Backoff::Fixed {
        delay: ms(50),
        max_attempts: 2,
    };
    assert_eq!(fixed.delay(1), Some(ms(50)));
    assert_eq!(fixed.delay(2), Some(ms(50)));
    assert_eq!(fixed.delay(3), None);
    assert_eq!(Backoff::None.delay(1), None);
    let mut never = Schedule::new(ReconnectPolicy::never());
    assert_eq!(never.next_delay(0), None);
}

#[test]
fn odd_multipliers_never_panic_or_shrink() {
    for multiplier in [f64::NAN, f64::INFINITY, -3.0, 0.0, 0.5, 1e300] {
        let backoff = Backoff::Exponential {
            initial: ms(10),
            max: Duration::MAX,
            multiplier,
            max_attempts: 2000,
        };
        let mut last = Duration::ZERO;
        for attempt in 1..=2000 {
            let d = backoff.delay(attempt).unwrap();
            assert!(d >= last && d >= ms(10));
            last = d;
        }
    }
}

#[test]
fn the_schedule_counts_failures_and_resets_on_success() {
    let policy = ReconnectPolicy {
        backoff: Backoff::Fixed {
            delay: ms(10),
            max_attempts: 3,
        },
        jitter: 0.0,
        connect_timeout: ms(100),
        pending: PendingPolicy::ResendIdempotent,
    };
    let mut schedule = Schedule::new(policy);
    for _ in 0..3 {
        assert_eq!(schedule.next_delay(u64::MAX), Some(ms(10)));
    }
    assert_eq!(schedule.next_delay(0), None);
    assert_eq!(schedule.failures(), 4);
    schedule.connected();
    assert_eq!(schedule.failures(), 0);
    assert_eq!(schedule.next_delay(7), Some(ms(10)));
}

proptest! {
    #[test]
    fn jitter_only_shortens_and_stays_within_its_fraction(
        random in any::<u64>(),
        jitter in 0.0f64..=1.0,
        attempt_ms in 1u64..100_000,
    ) {
        let policy = ReconnectPolicy {
            backoff: Backoff::Fixed { delay: ms(attempt_ms), max_attempts: 1 },
            jitter,
            ..ReconnectPolicy::default()
        };
        let d = Schedule::new(policy).next_delay(random).unwrap();
        let full = ms(attempt_ms);
        prop_assert!(d <= full);
        prop_assert!(d.as_secs_f64() >= full.as_secs_f64() * (1.0 - jitter) - 1e-9);
    }
}

#[test]
fn full_jitter_spreads_delays() {
    let policy = ReconnectPolicy {
        backoff: Backoff::Fixed {
            delay: ms(1000),
            max_attempts: 1,
        },
        jitter: 1.0,
        ..ReconnectPolicy::default()
    };
    let zero = Schedule::new(policy).next_delay(0).unwrap();
    let top = Schedule::new(policy).next_delay(u64::MAX).unwrap();
    let mid = Schedule::new(policy).next_delay(u64::MAX / 2).unwrap();
    // Random 0 keeps the whole delay; the top value removes almost all of it.
    assert_eq!(zero, ms(1000));
    assert!(top < ms(1), "{top:?}");
    assert!(mid > ms(400) && mid < ms(600), "{mid:?}");
}

#[test]
fn seeded_jitter_makes_delays_reproducible_and_spread() {
    let policy = ReconnectPolicy {
        backoff: Backoff::Fixed {
            delay: ms(1000),
            max_attempts: 1_000,
        },
        jitter: 1.0,
        ..ReconnectPolicy::default()
    };
    let delays = |seed| {
        let mut jitter = Jitter::new(seed);
        let mut schedule = Schedule::new(policy);
        (0..200)
            .map(|_| schedule.next_delay(jitter.next_u64()).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(delays(7), delays(7), "the same seed, the same delays");
    assert_ne!(delays(7), delays(8));
    // Seed 0 is usable (xorshift would stay at 0 and never jitter).
    assert!(delays(0).iter().any(|d| *d < ms(900)));
    // Spread over the whole range: some delays in each fifth of it.
    let all = delays(42);
    for fifth in 0..5u64 {
        let (low, high) = (ms(fifth * 200), ms((fifth + 1) * 200));
        assert!(
            all.iter().any(|d| *d >= low && *d <= high),
            "no delay in {low:?}..{high:?}"
        );
    }
    // With std, a jitter seeded from the process's random hash keys.
    #[cfg(feature = "std")]
    {
        let mut a = Jitter::from_std_random_state();
        assert_ne!(a.next_u64(), a.next_u64());
    }
}

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

#[test]
fn subscriptions_are_remembered_forgotten_and_replayed() {
    let mut subs = Subscriptions::default();
    subs.subscribed("rpc.subscribe", Some(&raw(r#"{"topic":"news"}"#)));
    subs.subscribed(
        "rpc.subscribe.batch",
        Some(&raw(r#"{"topics":["alerts","updates","news"]}"#)),
    );
    subs.subscribed(
        "rpc.subscribe.persistent",
        Some(&raw(r#"{"subscription_id":"p1","topic":"orders"}"#)),
    );
    subs.subscribed(
        "rpc.subscribe.persistent.batch",
        Some(&raw(
            r#"{"subscriptions":[{"subscription_id":"p2","topic":"pay"},{"topic":"no id"}]}"#,
        )),
    );
    // Not pub/sub, or malformed: ignored.
    subs.subscribed("add", Some(&raw(r#"{"topic":"x"}"#)));
    subs.subscribed("rpc.subscribe", Some(&raw(r#"[1,2]"#)));
    subs.subscribed("rpc.subscribe", None);
    assert_eq!(subs.len(), 5);

    subs.unsubscribing("rpc.unsubscribe", Some(&raw(r#"{"topic":"alerts"}"#)));
    subs.unsubscribing(
        "rpc.unsubscribe.persistent",
        Some(&raw(r#"{"subscription_id":"p2"}"#)),
    );
    let replay: Vec<(&str, String)> = subs
        .replay()
        .into_iter()
        .map(|(m, p)| (m, p.get().to_owned()))
        .collect();
    assert_eq!(
        replay,
        [
            ("rpc.subscribe", r#"{"topic":"news"}"#.to_owned()),
            ("rpc.subscribe", r#"{"topic":"updates"}"#.to_owned()),
            (
                "rpc.subscribe.persistent",
                r#"{"subscription_id":"p1","topic":"orders"}"#.to_owned()
            ),
        ]
    );
    subs.unsubscribing(
        "rpc.unsubscribe.batch",
        Some(&raw(r#"{"topics":["news"]}"#)),
    );
    subs.refused("rpc.subscribe", Some(&raw(r#"{"topic":"updates"}"#)));
    assert_eq!(subs.topics().count(), 0);
    assert_eq!(subs.persistent().collect::<Vec<_>>(), [("p1", "orders")]);
}

#[test]
fn the_subscription_table_is_bounded() {
    let mut subs = Subscriptions::new(2);
    for topic in ["a", "b", "c"] {
        let params = raw(&format!(r#"{{"topic":"{topic}"}}"#));
        subs.subscribed("rpc.subscribe", Some(&params));
    }
    assert_eq!(subs.topics().collect::<Vec<_>>(), ["a", "b"]);
    // Re-subscribing to a held topic still works at capacity.
    subs.subscribed("rpc.subscribe", Some(&raw(r#"{"topic":"a"}"#)));
    assert_eq!(subs.len(), 2);
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

#[test]
fn heartbeat_pings_at_its_interval_and_declares_a_silent_peer_dead() {
    let mut hb = Heartbeat::new(HeartbeatConfig::ping(ms(100), ms(50)), at(0));
    assert_eq!(hb.poll_timeout(), Some(at(100)));
    assert_eq!(hb.handle_timeout(at(99)), None);
    assert_eq!(hb.handle_timeout(at(100)), Some(Beat::SendPing));
    assert_eq!(hb.poll_timeout(), Some(at(150)));
    // The pong comes: the next ping is one interval after it.
    assert_eq!(hb.handle_notification("pong", at(120)), Heard::Pong);
    assert_eq!(hb.poll_timeout(), Some(at(220)));
    assert_eq!(hb.handle_timeout(at(220)), Some(Beat::SendPing));
    // No pong this time.
    assert_eq!(hb.handle_timeout(at(269)), None);
    assert_eq!(hb.handle_timeout(at(270)), Some(Beat::Dead));
    assert!(hb.is_dead());
    assert_eq!(hb.poll_timeout(), None);
    assert_eq!(hb.handle_timeout(at(10_000)), None);
}

#[test]
fn heartbeat_answers_pings_and_passes_other_notifications() {
    let mut hb = Heartbeat::new(HeartbeatConfig::answer_only(), at(0));
    assert_eq!(hb.poll_timeout(), None);
    assert_eq!(hb.handle_notification("ping", at(5)), Heard::Ping);
    assert_eq!(hb.handle_notification("pong", at(5)), Heard::Pong);
    assert_eq!(hb.handle_notification("pingx", at(5)), Heard::Other);
    assert_eq!(hb.handle_timeout(at(1_000_000)), None);
}

mod machine {
    //! The reconnect machine in virtual time.

    use core::time::Duration;

    use sansrpc::connection::SendError;
    use sansrpc::ext::reconnect::{
        Action, Backoff, Jitter, PendingPolicy, ReconnectPolicy, Reconnector, State,
    };
    use sansrpc::{Instant, RawValue};

    fn at(ms: u64) -> Instant {
        Instant::from_duration(Duration::from_millis(ms))
    }

    fn fixed(max_attempts: u32) -> ReconnectPolicy {
        ReconnectPolicy {
            backoff: Backoff::Fixed {
                delay: Duration::from_secs(1),
                max_attempts,
            },
            jitter: 0.0,
            connect_timeout: Duration::from_secs(5),
            pending: PendingPolicy::ResendIdempotent,
        }
    }

    fn actions(rc: &mut Reconnector) -> Vec<Action> {
        std::iter::from_fn(|| rc.poll_action()).collect()
    }

    #[test]
    fn failed_attempts_back_off_then_give_up() {
        let mut rc = Reconnector::new(fixed(2), Jitter::new(1), at(0));
        assert_eq!(actions(&mut rc), [Action::Connect]);
        assert_eq!(rc.admit(), Err(SendError::Connecting));
        rc.handle_failed(at(10));
        assert_eq!(rc.poll_timeout(), Some(at(1010)));
        rc.handle_timeout(at(1009));
        assert!(actions(&mut rc).is_empty());
        rc.handle_timeout(at(1010));
        assert_eq!(actions(&mut rc), [Action::Connect]);
        // Two retries after the first attempt, then no more.
        rc.handle_failed(at(1020));
        rc.handle_timeout(at(2020));
        assert_eq!(actions(&mut rc), [Action::Connect]);
        rc.handle_failed(at(2030));
        assert_eq!(actions(&mut rc), [Action::GiveUp { attempts: 2 }]);
        assert_eq!(rc.state(), State::Closed);
        assert_eq!(rc.admit(), Err(SendError::Closed));
        assert_eq!(rc.poll_timeout(), None);
    }

    #[test]
    fn an_attempt_past_the_connect_timeout_is_abandoned_and_retried() {
        let mut rc = Reconnector::new(fixed(5), Jitter::new(1), at(0));
        actions(&mut rc);
        assert_eq!(rc.poll_timeout(), Some(at(5000)));
        rc.handle_timeout(at(5000));
        assert_eq!(actions(&mut rc), [Action::Abandon]);
        assert_eq!(rc.poll_timeout(), Some(at(6000)));
        // A late success of the abandoned attempt changes nothing.
        rc.handle_connected(at(5500));
        assert!(actions(&mut rc).is_empty());
        rc.handle_timeout(at(6000));
        assert_eq!(actions(&mut rc), [Action::Connect]);
        rc.handle_connected(at(6100));
        assert_eq!(actions(&mut rc), [Action::Open]);
        assert_eq!(rc.state(), State::Open);
        assert_eq!(rc.failures(), 0);
    }

    #[test]
    fn a_lost_connection_replays_subscriptions_then_resends_idempotent_calls() {
        let mut rc = Reconnector::new(fixed(5), Jitter::new(1), at(0));
        rc.handle_connected(at(0));
        actions(&mut rc);
        let params = RawValue::from_json(r#"{"topic":"news.*"}"#).unwrap();
        rc.subscriptions().subscribed("rpc.subscribe", Some(params));
        // Two calls were waiting when the connection went: one idempotent.
        rc.handle_lost(at(100));
        assert_eq!(rc.state(), State::Connecting);
        assert!(rc.call_lost(7, true));
        assert!(!rc.call_lost(8, false));
        rc.handle_timeout(at(1100));
        rc.handle_connected(at(1200));
        assert_eq!(actions(&mut rc), [Action::Connect, Action::Open]);
        let replay = rc.replay();
        assert_eq!(replay.len(), 1);
        assert_eq!(replay[0].0, "rpc.subscribe");
        assert_eq!(replay[0].1.get(), r#"{"topic":"news.*"}"#);
        assert_eq!(rc.take_resend().collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn closing_an_open_client_ends_when_the_connection_does() {
        let mut rc = Reconnector::new(fixed(5), Jitter::new(1), at(0));
        rc.handle_connected(at(0));
        actions(&mut rc);
        rc.close();
        assert_eq!(rc.state(), State::Closing);
        assert_eq!(rc.admit(), Err(SendError::Closed));
        assert!(!rc.call_lost(1, true), "nothing is resent while closing");
        assert!(actions(&mut rc).is_empty());
        rc.handle_lost(at(10));
        assert_eq!(actions(&mut rc), [Action::Closed]);
        assert_eq!(rc.state(), State::Closed);
        assert_eq!(rc.poll_timeout(), None);
    }

    #[test]
    fn closing_while_waiting_closes_at_once() {
        let mut rc = Reconnector::new(fixed(5), Jitter::new(1), at(0));
        rc.handle_failed(at(0));
        actions(&mut rc);
        rc.close();
        assert_eq!(actions(&mut rc), [Action::Closed]);
        rc.handle_timeout(at(10_000));
        assert!(actions(&mut rc).is_empty(), "no attempt after close");
    }

    #[test]
    fn the_same_seed_gives_the_same_delays() {
        let policy = ReconnectPolicy {
            jitter: 0.5,
            ..fixed(10)
        };
        let delays = |seed| {
            let mut rc = Reconnector::new(policy, Jitter::new(seed), at(0));
            (0..5)
                .map(|_| {
                    rc.handle_failed(at(0));
                    let next = rc.poll_timeout().unwrap();
                    rc.handle_timeout(next);
                    next
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(delays(42), delays(42));
        assert_ne!(delays(42), delays(43));
        assert!(delays(42)
            .iter()
            .all(|d| d.since_epoch() <= Duration::from_secs(1)));
    }
}
