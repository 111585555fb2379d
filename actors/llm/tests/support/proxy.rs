//! A fault-injecting HTTP/1.1 proxy on 127.0.0.1 in front of a real server: it forwards
//! requests, or answers the next ones with scripted faults (429 with `Retry-After`, 500,
//! a hang, a truncated body, an answer without choices), and records what it saw.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with one request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fault {
    /// Forward it.
    Forward,
    /// `429 Too Many Requests` with `Retry-After: secs`.
    RateLimit(u32),
    /// `500` whose body echoes the request head (as some broken gateways do).
    ServerError,
    /// Say nothing for this long, then close.
    Hang(Duration),
    /// Forward, then send only half of the answer's body and close.
    Truncate,
    /// `200` with an empty `choices` list.
    EmptyChoices,
    /// `200` with this body (an answer the server gave before).
    Answer(String),
    /// This error status with this body.
    Failure(u16, String),
}

/// One request as the proxy saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// The request head (request line and headers).
    pub head: String,
    /// The body.
    pub body: String,
    /// What was done with it.
    pub fault: Fault,
    /// The body of the server's answer, when forwarded.
    pub answer: Option<String>,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Fault>>,
    seen: Mutex<Vec<Seen>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

/// A running proxy (stops with the runtime that started it).
#[derive(Clone)]
pub(crate) struct Proxy {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Starts a proxy in front of `upstream` (`http://127.0.0.1:PORT/v1`).
    pub(crate) async fn start(upstream: &str) -> Proxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let state = state.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move { serve(client, &upstream, &state).await });
            }
        });
        Proxy {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            shared,
        }
    }

    /// Scripts the next requests' faults (after the script: forward).
    pub(crate) fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.script.lock().unwrap().extend(faults);
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Requests so far.
    pub(crate) fn count(&self) -> usize {
        self.shared.seen.lock().unwrap().len()
    }

    /// The most requests in flight at once.
    pub(crate) fn peak(&self) -> usize {
        self.shared.peak.load(Ordering::SeqCst)
    }
}

/// Reads one request (head and `Content-Length` body); `None` at end of stream.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let head_end = loop {
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Some((head, body))
}

/// Sends the request upstream on a fresh connection and reads the whole answer.
async fn forward(upstream: &str, head: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut server = TcpStream::connect(upstream).await.ok()?;
    let mut request = String::new();
    for (i, line) in head.trim_end().lines().enumerate() {
        if i > 0 && line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str("Connection: close\r\n\r\n");
    server.write_all(request.as_bytes()).await.ok()?;
    server.write_all(body).await.ok()?;
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).await.ok()?;
    Some(answer)
}

fn reply(status: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves one request per connection (every answer says `Connection: close`).
async fn serve(mut client: TcpStream, upstream: &str, state: &Shared) {
    let mut buffer = Vec::new();
    let Some((head, body)) = read_request(&mut client, &mut buffer).await else {
        return;
    };
    let fault = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Fault::Forward);
    let index = {
        let mut seen = state.seen.lock().unwrap();
        seen.push(Seen {
            head: head.clone(),
            body: String::from_utf8_lossy(&body).into_owned(),
            fault: fault.clone(),
            answer: None,
        });
        seen.len() - 1
    };
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.peak.fetch_max(now, Ordering::SeqCst);
    let answer = match &fault {
        Fault::Forward => {
            let answer = forward(upstream, &head, &body).await;
            if let Some(bytes) = &answer {
                let text = String::from_utf8_lossy(bytes);
                let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
                state.seen.lock().unwrap()[index].answer = body;
            }
            answer
        }
        Fault::RateLimit(secs) => Some(reply(
            "429 Too Many Requests",
            &format!("Retry-After: {secs}\r\n"),
            r#"{"error":{"message":"rate limited","type":"rate_limit_error"}}"#,
        )),
        Fault::ServerError => Some(reply(
            "500 Internal Server Error",
            "",
            &format!(
                "upstream failed for request: {}",
                head.replace("\r\n", " | ")
            ),
        )),
        Fault::Hang(how_long) => {
            tokio::time::sleep(*how_long).await;
            None
        }
        Fault::Truncate => forward(upstream, &head, &body).await.map(|mut answer| {
            let head_end = answer
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(answer.len(), |i| i + 4);
            let keep = head_end + (answer.len() - head_end) / 2;
            answer.truncate(keep);
            answer
        }),
        Fault::EmptyChoices => Some(reply(
            "200 OK",
            "",
            r#"{"object":"chat.completion","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}"#,
        )),
        Fault::Answer(body) => Some(reply("200 OK", "", body)),
        Fault::Failure(status, body) => Some(reply(&format!("{status} Failure"), "", body)),
    };
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    if let Some(bytes) = answer
        && client.write_all(&bytes).await.is_ok()
    {
        // A closed client needs no orderly shutdown.
        let _ = client.shutdown().await;
    }
}
