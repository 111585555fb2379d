//! Experiment files (TOML, or JSON by extension) with errors that name the file, the line
//! and the field.

use mosaic_core::{ExperimentSpec, SpecError};
use std::fmt;
use std::path::{Path, PathBuf};

/// An experiment file could not be used.
#[derive(Debug, thiserror::Error)]
pub struct FileError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted path of the field, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The formats an experiment file can be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Toml,
    Json,
}

impl Format {
    fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Toml,
        }
    }
}

/// A parsed experiment file, kept with its text so later errors can point into it.
#[derive(Clone, Debug)]
pub struct ExperimentFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The experiment.
    pub spec: ExperimentSpec,
    text: String,
    format: Format,
}

impl ExperimentFile {
    /// Reads and parses `path`, checking what needs no registry.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("x.toml");
    /// std::fs::write(&path, "name = 'x'\nepisodes = 'many'\noperators = []\n").unwrap();
    /// let err = mosaic::experiment_file::ExperimentFile::load(&path).unwrap_err();
    /// assert_eq!(err.line, Some(2));
    /// assert_eq!(err.field.as_deref(), Some("episodes"));
    /// ```
    pub fn load(path: &Path) -> Result<Self, FileError> {
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            file: path.to_owned(),
            line: None,
            field: None,
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(path, text)
    }

    /// Parses `text` as if read from `path`.
    pub fn parse(path: &Path, text: String) -> Result<Self, FileError> {
        let format = Format::of(path);
        let spec = match format {
            Format::Toml => toml::from_str::<ExperimentSpec>(&text).map_err(|e| {
                let line = e.span().map(|span| line_of(&text, span.start));
                let field = e.span().and_then(|span| key_at(&text, span.start));
                FileError {
                    file: path.to_owned(),
                    line,
                    field,
                    message: e.message().to_owned(),
                }
            })?,
            Format::Json => {
                serde_json::from_str::<ExperimentSpec>(&text).map_err(|e| FileError {
                    file: path.to_owned(),
                    line: Some(e.line()),
                    field: None,
                    message: e.to_string(),
                })?
            }
        };
        let file = Self {
            path: path.to_owned(),
            spec,
            text,
            format,
        };
        file.spec.validate().map_err(|e| file.error_at(&e))?;
        Ok(file)
    }

    /// Turns a problem found in the experiment into an error pointing into this file.
    pub fn error_at(&self, error: &SpecError) -> FileError {
        let line = match self.format {
            Format::Toml => toml_line(&self.text, &error.path),
            Format::Json => json_line(&self.text, &error.path),
        };
        FileError {
            file: self.path.clone(),
            line,
            field: (!error.path.is_empty()).then(|| error.path.clone()),
            message: error.message.clone(),
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The key written at the start of the line holding `offset` (`key = value`).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty()).then(|| key.to_owned())
}

/// Splits `operators[1].agents.green_0.kind` into keys and indices.
fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        if let Some(open) = rest.find('[') {
            out.push(Segment::Key(&rest[..open]));
            rest = &rest[open..];
            while let Some(close) = rest.find(']') {
                if let Ok(i) = rest[1..close].parse() {
                    out.push(Segment::Index(i));
                }
                rest = &rest[close + 1..];
            }
        } else {
            out.push(Segment::Key(rest));
        }
    }
    out
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Item(&'a toml_edit::Item),
    Table(&'a toml_edit::Table),
    Value(&'a toml_edit::Value),
}

impl<'a> Node<'a> {
    fn key(self, key: &str) -> Option<(Node<'a>, Option<usize>)> {
        let table: &dyn toml_edit::TableLike = match self {
            Node::Item(item) => item.as_table_like()?,
            Node::Table(table) => table,
            Node::Value(value) => value.as_inline_table()?,
        };
        let (k, item) = table.get_key_value(key)?;
        Some((Node::Item(item), k.span().map(|s| s.start)))
    }

    fn index(self, i: usize) -> Option<(Node<'a>, Option<usize>)> {
        let array = match self {
            Node::Item(toml_edit::Item::ArrayOfTables(tables)) => {
                let table = tables.get(i)?;
                return Some((Node::Table(table), table.span().map(|s| s.start)));
            }
            Node::Item(item) => item.as_array()?,
            Node::Value(value) => value.as_array()?,
            Node::Table(_) => return None,
        };
        let value = array.get(i)?;
        Some((Node::Value(value), value.span().map(|s| s.start)))
    }
}

/// The line of the deepest part of `path` present in the TOML document.
fn toml_line(text: &str, path: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut node = Node::Table(doc.as_table());
    let mut best = None;
    for segment in segments(path) {
        let next = match segment {
            Segment::Key(key) => node.key(key),
            Segment::Index(i) => node.index(i),
        };
        let Some((child, offset)) = next else { break };
        best = offset.or(best);
        node = child;
    }
    best.map(|offset| line_of(text, offset))
}

/// The line of the deepest key of `path` found in order in the JSON text (JSON errors
/// from serde_json carry no spans for later validation).
fn json_line(text: &str, path: &str) -> Option<usize> {
    let mut from = 0;
    let mut best = None;
    for segment in segments(path) {
        let Segment::Key(key) = segment else { continue };
        let needle = format!("\"{key}\"");
        match text[from..].find(&needle) {
            Some(at) => {
                from += at + needle.len();
                best = Some(from);
            }
            None => break,
        }
    }
    best.map(|offset| line_of(text, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = r#"name = "t"
episodes = 2

[[operators]]
id = "a"
env = "race"
agents = { "*" = { kind = "random" } }

[[operators]]
id = "b"
env = "race"

[operators.agents.green_0]
kind = "genius"
"#;

    #[test]
    fn validation_paths_map_to_toml_lines() {
        assert_eq!(
            toml_line(TOML, "operators[1].agents.green_0.kind"),
            Some(14)
        );
        assert_eq!(toml_line(TOML, "operators[0].agents.*.kind"), Some(7));
        assert_eq!(toml_line(TOML, "operators[1].id"), Some(10));
        assert_eq!(toml_line(TOML, "episodes"), Some(2));
        assert_eq!(toml_line(TOML, "operators[1].agents.blue_9"), Some(13));
    }

    #[test]
    fn validation_paths_map_to_json_lines() {
        let json = "{\n \"name\": \"t\",\n \"operators\": [\n  {\"id\": \"a\",\n   \"agents\": {\"x\": 1}}]}";
        assert_eq!(json_line(json, "operators[0].agents.x"), Some(5));
    }

    #[test]
    fn parse_errors_name_line_and_field() {
        let path = Path::new("exp.toml");
        let err =
            ExperimentFile::parse(path, TOML.replace("episodes = 2", "episodes = -2")).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(2), Some("episodes"))
        );
        let err = ExperimentFile::parse(
            path,
            TOML.replace("env = \"race\"\n\n[", "envv = \"race\"\n\n["),
        )
        .unwrap_err();
        assert!(err.message.contains("unknown field `envv`"), "{err}");
        assert!(err.to_string().starts_with("exp.toml:"), "{err}");
        let err =
            ExperimentFile::parse(path, TOML.replace("id = \"b\"", "id = \"a\"")).unwrap_err();
        assert_eq!(err.line, Some(10));
        assert_eq!(err.field.as_deref(), Some("operators[1].id"));
    }
}
