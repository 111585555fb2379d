//! Lexical statistics of what agents write, after ALEM's diagnostics: the style of the
//! messages they send to teammates (App. N, Table 11) and how they use their memory entry,
//! the scratchpad (App. L, Table 9).
//!
//! The detectors are ALEM's simple lexicon and pattern probes, proxies rather than
//! discourse parsers:
//!
//! - **sentences**: maximal stretches ending in `.`, `!` or `?` (or at the end of the text)
//!   that hold a letter or digit;
//! - **imperative**: a sentence whose first word (after an optional "Agent X," addressee)
//!   is a verb of ALEM's action lexicon (move, go, do, …, defend), plus such verbs right
//!   after an addressee inside a sentence;
//! - **broadcast**: a sentence opening with let's / lets / let us / we should / we will /
//!   we need to / we must / we'll;
//! - **addresses a teammate**: "Agent X," or "Agent_X," followed by more text;
//! - **acknowledgement**, **politeness**, **urgency**, **plan / future-tense** and
//!   **past-tense / memory** words: ALEM's word lists, matched as whole words;
//! - **question**: a `?` outside coordinate tokens; **exclamation**: a `!`;
//! - **coordinate**: two integers with a comma, optionally in parentheses (`25, 23`,
//!   `(0, -1)`);
//! - **self-references**: the words i, my, me, i'm, i'll, mine;
//! - memory entries: **lines**, **multi-line** (a newline), **turn-indexed plan** (at least
//!   two lines opening with `T9:` or `Turn 9:`), **compact state summary** (at least two
//!   `Field:` labels of Pos, Position, HP, Health, Inv, Inventory, Energy, Hunger, Thirst,
//!   A1, A2, Agent), **teammate reference** ("Agent X" or "AX");
//! - **turnover** between an agent's consecutive texts in an episode: the character
//!   similarity of Python's `difflib.SequenceMatcher(None, previous, current).ratio()`
//!   ([`sequence_ratio`], the same algorithm, autojunk included) and the Jaccard similarity
//!   of their sets of lower-cased word tokens.
//!
//! ```
//! use mosaic_recorder::lexical::{MessageStyle, sequence_ratio};
//! let style = MessageStyle::of([vec!["Agent 1, mine the stone at (3, 4) now!", "Ok, I will."]]).unwrap();
//! assert_eq!(style.messages, 2);
//! assert_eq!(style.imperative_pct, 50.0);
//! assert_eq!(style.coordinate_pct, 50.0);
//! assert_eq!(sequence_ratio("abcd", "bcde"), 0.75);
//! ```

use regex_lite::Regex;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

/// ALEM's action lexicon for imperatives.
const IMPERATIVE_VERBS: &[&str] = &[
    "move",
    "go",
    "do",
    "place",
    "make",
    "drink",
    "eat",
    "attack",
    "give",
    "request",
    "mine",
    "chop",
    "gather",
    "face",
    "wait",
    "stay",
    "build",
    "kill",
    "head",
    "bring",
    "get",
    "take",
    "drop",
    "equip",
    "craft",
    "sleep",
    "rest",
    "hold",
    "return",
    "follow",
    "stop",
    "switch",
    "prioritize",
    "focus",
    "defend",
];

/// Word-list pattern: any of `words`, matched as whole words, case-insensitively.
fn words(words: &[&str]) -> Regex {
    let alternatives: Vec<String> = words.iter().map(|w| regex_lite::escape(w)).collect();
    Regex::new(&format!(r"(?i)\b(?:{})\b", alternatives.join("|"))).expect("a valid word list")
}

static COORDINATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\(?\s*-?\d+\s*,\s*-?\d+\s*\)?").expect("a valid pattern"));
static ADDRESSEE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bagent[ _]?\d+\s*,\s*\S").expect("a valid pattern"));
static ADDRESSEE_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bagent[ _]?\d+\s*[,:]\s*([a-z]+)").expect("a valid pattern")
});
static LEADING_ADDRESSEE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^\s*agent[ _]?\d+\s*[,:]\s*").expect("a valid pattern"));
static BROADCAST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:let's|lets|let us|we should|we will|we need to|we must|we'll)\b")
        .expect("a valid pattern")
});
static ACKNOWLEDGEMENT: LazyLock<Regex> = LazyLock::new(|| {
    words(&[
        "ok",
        "okay",
        "got it",
        "copy",
        "acknowledged",
        "agreed",
        "sounds good",
        "on it",
        "will do",
        "roger",
    ])
});
static POLITENESS: LazyLock<Regex> =
    LazyLock::new(|| words(&["please", "thanks", "thank you", "ty"]));
static URGENCY: LazyLock<Regex> = LazyLock::new(|| {
    words(&[
        "right now",
        "now",
        "urgent",
        "urgently",
        "immediately",
        "asap",
        "critical",
        "critically",
        "hurry",
        "quickly",
        "fast",
    ])
});
static PLAN: LazyLock<Regex> = LazyLock::new(|| {
    words(&[
        "going to", "i'll", "we'll", "i will", "we will", "will", "gonna", "planning", "plan",
        "next", "then", "after", "once", "when",
    ])
});
static PAST: LazyLock<Regex> = LazyLock::new(|| {
    words(&[
        "tried", "failed", "was", "were", "did", "didn't", "couldn't", "earlier", "before",
        "already", "just", "noticed", "saw",
    ])
});
static SELF_REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| words(&["i'm", "i'll", "i", "my", "me", "mine"]));
static TEAMMATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:agent\s*\d+|a\d+)\b").expect("a valid pattern"));
static TURN_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^\s*(?:t\s*\d+|turn\s+\d+)\s*:").expect("a valid pattern"));
static STATUS_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:pos|position|hp|health|inv|inventory|energy|hunger|thirst|a1|a2|agent)\s*:",
    )
    .expect("a valid pattern")
});
static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[a-z0-9']+").expect("a valid pattern"));

/// The sentences of `text` (see the module docs).
fn sentences(text: &str) -> Vec<&str> {
    text.split_inclusive(['.', '!', '?'])
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .collect()
}

/// Imperative verbs in `text`: sentence-initial ones and ones right after an addressee.
fn imperatives(text: &str) -> usize {
    let is_verb = |word: &str| IMPERATIVE_VERBS.contains(&word.to_lowercase().as_str());
    sentences(text)
        .into_iter()
        .map(|sentence| {
            let rest = match LEADING_ADDRESSEE.find(sentence) {
                Some(m) => &sentence[m.end()..],
                None => sentence,
            };
            let first = rest
                .split(|c: char| !c.is_alphabetic())
                .find(|w| !w.is_empty())
                .unwrap_or("");
            let initial = usize::from(is_verb(first));
            // Addressee-verb pairs inside the sentence (the leading one is counted above).
            let inner = ADDRESSEE_VERB
                .captures_iter(sentence)
                .filter(|c| {
                    c.get(0)
                        .is_some_and(|m| m.start() > 0 && !sentence[..m.start()].trim().is_empty())
                })
                .filter(|c| c.get(1).is_some_and(|verb| is_verb(verb.as_str())))
                .count();
            initial + inner
        })
        .sum()
}

/// The lower-cased word tokens of `text`.
fn tokens(text: &str) -> BTreeSet<String> {
    let lower = text.to_lowercase();
    WORD.find_iter(&lower)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Jaccard similarity of two texts' token sets (1 when both have none).
fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (tokens(a), tokens(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// Python's `difflib.SequenceMatcher(None, a, b).ratio()` over the texts' characters:
/// 2·M / (|a| + |b|), M the characters of the matching blocks that Ratcliff and
/// Obershelp's recursive longest-match finds, with difflib's tie-breaking and its
/// "autojunk" rule (for `b` of 200 characters or more, characters making up more than 1%
/// of `b` do not start a match). 1 for two empty texts.
///
/// ```
/// use mosaic_recorder::lexical::sequence_ratio;
/// assert_eq!(sequence_ratio("", ""), 1.0);
/// assert_eq!(sequence_ratio("abc", "xyz"), 0.0);
/// assert!((sequence_ratio("kitten", "sitting") - 8.0 / 13.0).abs() < 1e-12);
/// ```
pub fn sequence_ratio(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * matching_characters(&a, &b) as f64 / total as f64
}

/// M of [`sequence_ratio`].
fn matching_characters(a: &[char], b: &[char]) -> usize {
    let mut b2j: HashMap<char, Vec<usize>> = HashMap::new();
    for (j, c) in b.iter().enumerate() {
        b2j.entry(*c).or_default().push(j);
    }
    if b.len() >= 200 {
        let limit = b.len() / 100 + 1;
        b2j.retain(|_, positions| positions.len() <= limit);
    }
    let mut matched = 0;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(a, b, &b2j, (alo, ahi, blo, bhi));
        if k > 0 {
            matched += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    matched
}

/// difflib's `find_longest_match` (no junk function): the longest block, earliest in `a`,
/// then earliest in `b`, found through `b2j` and then extended by equal characters.
fn longest_match(
    a: &[char],
    b: &[char],
    b2j: &HashMap<char, Vec<usize>>,
    (alo, ahi, blo, bhi): (usize, usize, usize, usize),
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
    let mut j2len: HashMap<usize, usize> = HashMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut next: HashMap<usize, usize> = HashMap::new();
        for &j in b2j.get(c).map_or(&[][..], Vec::as_slice) {
            if j < blo {
                continue;
            }
            if j >= bhi {
                break;
            }
            let k = j
                .checked_sub(1)
                .and_then(|p| j2len.get(&p))
                .copied()
                .unwrap_or(0)
                + 1;
            next.insert(j, k);
            if k > bestsize {
                (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
            }
        }
        j2len = next;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
    }
    while besti + bestsize < ahi
        && bestj + bestsize < bhi
        && a[besti + bestsize] == b[bestj + bestsize]
    {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
}

/// Turnover of consecutive texts: summed similarities and the pairs they came from.
#[derive(Default)]
struct Turnover {
    pairs: usize,
    characters: f64,
    jaccard: f64,
    verbatim: usize,
}

impl Turnover {
    fn add(&mut self, previous: &str, current: &str) {
        self.pairs += 1;
        self.characters += sequence_ratio(previous, current);
        self.jaccard += jaccard(previous, current);
        self.verbatim += usize::from(previous == current);
    }

    /// Mean character similarity, mean Jaccard, share of verbatim repeats (percent).
    fn means(&self) -> (Option<f64>, Option<f64>, Option<f64>) {
        let n = self.pairs as f64;
        match self.pairs {
            0 => (None, None, None),
            _ => (
                Some(self.characters / n),
                Some(self.jaccard / n),
                Some(100.0 * self.verbatim as f64 / n),
            ),
        }
    }
}

/// The per-text `figures` of every non-empty text of `streams` (empty texts are not texts:
/// nothing was written), averaged over the texts, with the number of texts and the turnover
/// of each stream's consecutive texts; `None` without a text.
fn mean_figures<'a, const N: usize, S, T>(
    streams: S,
    figures: impl Fn(&str) -> [f64; N],
) -> Option<(usize, [f64; N], Turnover)>
where
    S: IntoIterator<Item = T>,
    T: IntoIterator<Item = &'a str>,
{
    let (mut count, mut sums, mut turnover) = (0, [0f64; N], Turnover::default());
    for stream in streams {
        let mut previous: Option<&str> = None;
        for text in stream.into_iter().filter(|t| !t.trim().is_empty()) {
            sums.iter_mut()
                .zip(figures(text))
                .for_each(|(sum, x)| *sum += x);
            count += 1;
            if let Some(previous) = previous {
                turnover.add(previous, text);
            }
            previous = Some(text);
        }
    }
    let n = count as f64;
    (count > 0).then(|| (count, sums.map(|s| s / n), turnover))
}

/// The style of the messages agents sent (ALEM's Table 11): means per message, shares in
/// percent of messages; similarities over consecutive messages of an agent in an episode.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MessageStyle {
    /// Messages (non-empty).
    pub messages: usize,
    /// Characters per message.
    pub characters: f64,
    /// Words per message.
    pub words: f64,
    /// Sentences per message.
    pub sentences: f64,
    /// Messages of two or more sentences, %.
    pub multi_sentence_pct: f64,
    /// Messages with an imperative verb, %.
    pub imperative_pct: f64,
    /// Imperative verbs per message.
    pub imperatives: f64,
    /// Messages with broadcast phrasing (let's, we should, …), %.
    pub broadcast_pct: f64,
    /// Messages addressing a teammate ("Agent X,"), %.
    pub addresses_teammate_pct: f64,
    /// Messages with an acknowledgement, %.
    pub acknowledgement_pct: f64,
    /// Messages with a question, %.
    pub question_pct: f64,
    /// Messages with an exclamation mark, %.
    pub exclamation_pct: f64,
    /// Messages with please / thanks, %.
    pub politeness_pct: f64,
    /// Messages with an urgency word, %.
    pub urgency_pct: f64,
    /// Messages with a coordinate, %.
    pub coordinate_pct: f64,
    /// Messages with a plan / future-tense word, %.
    pub plan_pct: f64,
    /// Messages with a past-tense / memory word, %.
    pub past_pct: f64,
    /// Self-references per message.
    pub self_references: f64,
    /// Character similarity to the agent's previous message (difflib ratio).
    pub char_similarity: Option<f64>,
    /// Jaccard similarity of tokens to the agent's previous message.
    pub jaccard: Option<f64>,
    /// Messages equal to the agent's previous one, % of those with a previous one.
    pub verbatim_pct: Option<f64>,
}

impl MessageStyle {
    /// The style of `streams`: each the messages of one agent in one episode, in order.
    /// `None` without a message.
    pub fn of<'a, S, T>(streams: S) -> Option<Self>
    where
        S: IntoIterator<Item = T>,
        T: IntoIterator<Item = &'a str>,
    {
        let (count, means, turnover) = mean_figures(streams, |text| {
            let sentences = sentences(text).len();
            let imperatives = imperatives(text);
            let without_coordinates = COORDINATE.replace_all(text, "");
            [
                text.chars().count() as f64,
                text.split_whitespace().count() as f64,
                sentences as f64,
                f64::from(u8::from(sentences >= 2)),
                f64::from(u8::from(imperatives > 0)),
                imperatives as f64,
                f64::from(u8::from(sentences_of(text).any(|s| BROADCAST.is_match(s)))),
                f64::from(u8::from(ADDRESSEE.is_match(text))),
                f64::from(u8::from(ACKNOWLEDGEMENT.is_match(text))),
                f64::from(u8::from(without_coordinates.contains('?'))),
                f64::from(u8::from(text.contains('!'))),
                f64::from(u8::from(POLITENESS.is_match(text))),
                f64::from(u8::from(URGENCY.is_match(text))),
                f64::from(u8::from(COORDINATE.is_match(text))),
                f64::from(u8::from(PLAN.is_match(text))),
                f64::from(u8::from(PAST.is_match(text))),
                SELF_REFERENCE.find_iter(text).count() as f64,
            ]
        })?;
        let [
            characters,
            words,
            sentence_count,
            multi,
            imperative,
            imperatives,
            broadcast,
            addressee,
            ack,
            question,
            exclamation,
            polite,
            urgent,
            coordinate,
            plan,
            past,
            selfref,
        ] = means;
        let (char_similarity, jaccard, verbatim_pct) = turnover.means();
        Some(Self {
            messages: count,
            characters,
            words,
            sentences: sentence_count,
            multi_sentence_pct: 100.0 * multi,
            imperative_pct: 100.0 * imperative,
            imperatives,
            broadcast_pct: 100.0 * broadcast,
            addresses_teammate_pct: 100.0 * addressee,
            acknowledgement_pct: 100.0 * ack,
            question_pct: 100.0 * question,
            exclamation_pct: 100.0 * exclamation,
            politeness_pct: 100.0 * polite,
            urgency_pct: 100.0 * urgent,
            coordinate_pct: 100.0 * coordinate,
            plan_pct: 100.0 * plan,
            past_pct: 100.0 * past,
            self_references: selfref,
            char_similarity,
            jaccard,
            verbatim_pct,
        })
    }
}

/// The sentences of `text`, as an iterator.
fn sentences_of(text: &str) -> impl Iterator<Item = &str> {
    sentences(text).into_iter()
}

/// How agents used their memory entry, the scratchpad (ALEM's Table 9): means per entry,
/// shares in percent of entries; similarities over an agent's consecutive entries in an
/// episode.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MemoryStyle {
    /// Entries (non-empty).
    pub entries: usize,
    /// Characters per entry.
    pub characters: f64,
    /// Lines per entry.
    pub lines: f64,
    /// Entries of two or more lines, %.
    pub multi_line_pct: f64,
    /// Entries with a turn-indexed plan, %.
    pub turn_plan_pct: f64,
    /// Entries with a compact state summary, %.
    pub state_summary_pct: f64,
    /// Entries with a plan / future-tense word, %.
    pub plan_pct: f64,
    /// Entries with a past-tense / memory word, %.
    pub past_pct: f64,
    /// Entries with a coordinate, %.
    pub coordinate_pct: f64,
    /// Entries naming a teammate, %.
    pub teammate_pct: f64,
    /// Coordinates per entry.
    pub coordinates: f64,
    /// Plan terms per entry.
    pub plan_terms: f64,
    /// Character similarity to the agent's previous entry (difflib ratio).
    pub char_similarity: Option<f64>,
    /// Jaccard similarity of tokens to the agent's previous entry.
    pub jaccard: Option<f64>,
}

impl MemoryStyle {
    /// The style of `streams`: each the scratchpad entries of one agent in one episode, in
    /// order. `None` without an entry.
    pub fn of<'a, S, T>(streams: S) -> Option<Self>
    where
        S: IntoIterator<Item = T>,
        T: IntoIterator<Item = &'a str>,
    {
        let (count, means, turnover) = mean_figures(streams, |text| {
            let lines = text.lines().count().max(1);
            let turn_lines = text.lines().filter(|l| TURN_LINE.is_match(l)).count();
            let coordinates = COORDINATE.find_iter(text).count();
            let plan_terms = PLAN.find_iter(text).count();
            [
                text.chars().count() as f64,
                lines as f64,
                f64::from(u8::from(text.contains('\n'))),
                f64::from(u8::from(turn_lines >= 2)),
                f64::from(u8::from(STATUS_FIELD.find_iter(text).count() >= 2)),
                f64::from(u8::from(plan_terms > 0)),
                f64::from(u8::from(PAST.is_match(text))),
                f64::from(u8::from(coordinates > 0)),
                f64::from(u8::from(TEAMMATE.is_match(text))),
                coordinates as f64,
                plan_terms as f64,
            ]
        })?;
        let [
            characters,
            lines,
            multi,
            turn,
            summary,
            plan,
            past,
            coordinate,
            teammate,
            coordinates,
            plan_terms,
        ] = means;
        let (char_similarity, jaccard, _) = turnover.means();
        Some(Self {
            entries: count,
            characters,
            lines,
            multi_line_pct: 100.0 * multi,
            turn_plan_pct: 100.0 * turn,
            state_summary_pct: 100.0 * summary,
            plan_pct: 100.0 * plan,
            past_pct: 100.0 * past,
            coordinate_pct: 100.0 * coordinate,
            teammate_pct: 100.0 * teammate,
            coordinates,
            plan_terms,
            char_similarity,
            jaccard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_detectors_fire_on_their_phrases() {
        let style = MessageStyle::of([vec![
            "Agent 1, mine the stone at (3, 4)! Then bring it here.",
            "Let's build the table now, please?",
            "ok",
        ]])
        .unwrap();
        assert_eq!(style.messages, 3);
        // One imperative: "mine" after the addressee ("Then bring" and "Let's build" do not
        // open with the verb).
        assert!((style.imperatives - 1.0 / 3.0).abs() < 1e-12);
        assert!((style.imperative_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.broadcast_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.addresses_teammate_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.acknowledgement_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.question_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.urgency_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.politeness_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((style.coordinate_pct - 100.0 / 3.0).abs() < 1e-9);
        // "Then" is a plan word.
        assert!((style.plan_pct - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(style.past_pct, 0.0);
        // Two sentences, one, one.
        assert!((style.sentences - 4.0 / 3.0).abs() < 1e-12);
        assert!((style.multi_sentence_pct - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(style.verbatim_pct, Some(0.0));
    }

    #[test]
    fn turnover_compares_consecutive_texts_of_one_stream_only() {
        let style = MessageStyle::of([vec!["go north", "go north"], vec!["wait here"]]).unwrap();
        assert_eq!(style.messages, 3);
        assert_eq!(style.char_similarity, Some(1.0));
        assert_eq!(style.jaccard, Some(1.0));
        assert_eq!(style.verbatim_pct, Some(100.0));
        // Empty texts are no messages; nothing at all is no style.
        assert_eq!(MessageStyle::of([vec!["", "  "]]), None);
    }

    #[test]
    fn memory_detectors_read_plans_summaries_and_teammates() {
        let style = MemoryStyle::of([vec![
            "T9: Do (completes handover)\nT10: move to (5, 6)\nA1 will bring wood",
            "Pos: (2, 3) HP: 9 Inv: wood",
        ]])
        .unwrap();
        assert_eq!(style.entries, 2);
        assert_eq!(style.lines, 2.0);
        assert_eq!(style.multi_line_pct, 50.0);
        assert_eq!(style.turn_plan_pct, 50.0);
        assert_eq!(style.state_summary_pct, 50.0);
        assert_eq!(style.teammate_pct, 50.0);
        assert_eq!(style.coordinate_pct, 100.0);
        assert_eq!(style.coordinates, 1.0);
        assert_eq!(style.plan_pct, 50.0);
        assert!(style.char_similarity.is_some_and(|s| s > 0.0 && s < 1.0));
    }

    #[test]
    fn sequence_ratio_follows_difflib_on_known_pairs() {
        // Values from Python's difflib.SequenceMatcher(None, a, b).ratio().
        assert_eq!(sequence_ratio("abcd", "bcde"), 0.75);
        assert!(
            (sequence_ratio(
                "private Thread currentThread;",
                "private volatile Thread currentThread;"
            ) - 0.8656716417910447)
                .abs()
                < 1e-12
        );
        assert_eq!(sequence_ratio("a", ""), 0.0);
    }
}
