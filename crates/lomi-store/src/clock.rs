//! The injected source of time: the store never reads the system clock on its own, so tests
//! (here and in other crates) can move time, e.g. past a retry epoch's 24 h, without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lomi_protocol::Timestamp;

/// Where the store (and the broker) read the current time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The real wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // A clock set before 1970 is a broken machine, not a reason to panic: it reads as 0.
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp::from_millis(millis)
    }
}

/// A clock that only moves when told to; share it with `Arc` and move it from the test.
#[derive(Debug)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            millis: AtomicI64::new(start.millis()),
        }
    }

    pub fn set(&self, now: Timestamp) {
        self.millis.store(now.millis(), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        // fetch_update never fails with a closure that always returns Some.
        let _previous = self
            .millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }
}

impl Default for ManualClock {
    /// Starts at 2026-12-02T16:00:00Z, a fixed and readable instant.
    fn default() -> Self {
        ManualClock::new(Timestamp::from_millis(1_796_227_200_000))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.millis.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
        clock.advance(Duration::from_secs(24 * 60 * 60));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000 + 86_400_000));
        clock.set(Timestamp::from_millis(5));
        assert_eq!(clock.now(), Timestamp::from_millis(5));
        assert!(SystemClock.now().millis() > 1_700_000_000_000);
    }
}
