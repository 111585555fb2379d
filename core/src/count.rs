//! Counts in messages: "1 attempt", "3 attempts".

use std::fmt;

/// `n` followed by `noun`, with an "s" unless `n` is 1.
///
/// ```
/// use mosaic_core::count::Count;
/// assert_eq!(Count(1, "attempt").to_string(), "1 attempt");
/// assert_eq!(Count(3, "episode").to_string(), "3 episodes");
/// assert_eq!(Count(0, "step").to_string(), "0 steps");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count<'a>(pub u64, pub &'a str);

impl fmt::Display for Count<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Count(n, noun) = *self;
        write!(f, "{n} {noun}{}", if n == 1 { "" } else { "s" })
    }
}
