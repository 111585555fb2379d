//! Restart policies, intensity and liveness: what a supervisor decides with.

use crate::Exit;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// When a child is restarted after it exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restart {
    /// Always restarted.
    #[default]
    Permanent,
    /// Restarted only after a failure (a normal exit ends it).
    Transient,
    /// Never restarted (also not by a sibling's `OneForAll`/`RestForOne` restart).
    Temporary,
}

impl Restart {
    pub(crate) fn after(self, exit: &Exit) -> bool {
        match self {
            Restart::Permanent => true,
            Restart::Transient => matches!(exit, Exit::Failed(_)),
            Restart::Temporary => false,
        }
    }
}

/// At most `max_restarts` restarts within `period`; one more and the supervisor gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts allowed within the period.
    pub max_restarts: u32,
    /// The sliding window.
    pub period: Duration,
}

impl Intensity {
    /// `max_restarts` per `period`.
    pub fn new(max_restarts: u32, period: Duration) -> Self {
        Self {
            max_restarts,
            period,
        }
    }
}

/// Restarts counted within a sliding window: the intensity check of supervisors and
/// sessions.
///
/// ```
/// use mosaic_supervisor::{Intensity, RestartWindow};
/// use std::time::{Duration, Instant};
/// let mut window = RestartWindow::new(Intensity::new(2, Duration::from_secs(60)));
/// let now = Instant::now();
/// assert!(window.allow(now));
/// assert!(window.allow(now));
/// assert!(!window.allow(now), "a third restart within the minute escalates");
/// ```
#[derive(Clone, Debug)]
pub struct RestartWindow {
    intensity: Intensity,
    restarts: VecDeque<Instant>,
}

impl RestartWindow {
    /// An empty window for `intensity`.
    pub fn new(intensity: Intensity) -> Self {
        Self {
            intensity,
            restarts: VecDeque::new(),
        }
    }

    /// The limit counted against.
    pub fn intensity(&self) -> Intensity {
        self.intensity
    }

    /// Counts a restart at `now`; `false` if it exceeds the intensity.
    pub fn allow(&mut self, now: Instant) -> bool {
        self.restarts.push_back(now);
        while let Some(&oldest) = self.restarts.front() {
            if now.duration_since(oldest) > self.intensity.period {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
        self.restarts.len() <= self.intensity.max_restarts as usize
    }

    /// Restarts within the window, counting a refused one.
    pub fn count(&self) -> usize {
        self.restarts.len()
    }
}

impl Default for Intensity {
    /// 1 restart per 5 s, as in OTP.
    fn default() -> Self {
        Self::new(1, Duration::from_secs(5))
    }
}

/// Where a child's heartbeats come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BeatSource {
    /// The child's event loop beats every interval by itself: a handler that blocks the
    /// child's thread (or never yields) silences it.
    #[default]
    EventLoop,
    /// The child calls [`ChildLink::beat`](crate::ChildLink::beat) itself (e.g. on each heartbeat of the external
    /// process it stands for).
    Child,
}

/// Liveness watch of a child: silent for `timeout` and it is declared failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// Expected beat interval; also how often the supervisor looks.
    pub interval: Duration,
    /// Silence after which the child has failed.
    pub timeout: Duration,
    /// Who beats.
    pub source: BeatSource,
}

impl Default for Heartbeat {
    /// Event-loop beats every 1 s, failed after 5 s of silence.
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
            source: BeatSource::EventLoop,
        }
    }
}

impl Heartbeat {
    /// Beats from the child ([`BeatSource::Child`]) with the default interval and timeout.
    pub fn manual() -> Self {
        Self {
            source: BeatSource::Child,
            ..Self::default()
        }
    }

    /// With this beat interval.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// With this silence timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}
