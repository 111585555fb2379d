//! A chat-completions server on a loopback port for tests that record language-model
//! agents without a model: it answers each request with the text a test's function gives
//! for it, and hands the request bodies back.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

/// A running stub: its base URL (for an `llm` slot's `backend.base_url`) and the request
/// bodies it received, in order.
#[derive(Debug)]
pub struct ChatStub {
    /// `http://127.0.0.1:PORT/v1`.
    pub url: String,
    /// The JSON body of every request answered.
    pub bodies: mpsc::Receiver<Value>,
}

/// Starts a stub answering each request with `answer(request body)` as the assistant's
/// content (the server lives as long as the test process).
pub fn start(answer: impl Fn(&Value) -> String + Send + 'static) -> ChatStub {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/v1", listener.local_addr().expect("an address"));
    let (sender, bodies) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let content = answer(&body);
            let _ = sender.send(body);
            let reply = serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            })
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.len()
            );
            let _ = reader.get_mut().write_all(head.as_bytes());
            let _ = reader.get_mut().write_all(reply.as_bytes());
        }
    });
    ChatStub { url, bodies }
}
