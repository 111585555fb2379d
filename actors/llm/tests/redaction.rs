//! What an OpenAI-compatible endpoint sends back carries the API key no further: error
//! bodies are redacted before they are cut, and an answer that is not JSON never reaches the
//! HTTP client library (which would log it whole). No error or log line holds a long body.
//! The endpoint is the fault-injecting proxy answering by itself (no model needed).

mod support;

use mosaic_llm::backend::{
    ApiKey, BackendError, ChatBackend, ChatMessage, ChatRequest, Constraint, OpenAiBackend, Role,
};
use support::Captured;
use support::proxy::{Fault, Proxy};

const KEY: &str = "sk-planted-5d1e8a7c3b9f";
/// Never contacted: every request is answered by a scripted fault.
const NO_UPSTREAM: &str = "http://127.0.0.1:9/v1";

fn backend(proxy: &Proxy) -> OpenAiBackend {
    OpenAiBackend::new(&proxy.base_url, "m", ApiKey::new(KEY), "redaction")
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::text(Role::User, "hello")],
        temperature: 0.0,
        max_tokens: 4,
        seed: None,
        constraint: Constraint::None,
        passthrough: Default::default(),
    }
}

#[actix_rt::test]
async fn a_key_straddling_the_cut_of_an_error_body_is_redacted() {
    let proxy = Proxy::start(NO_UPSTREAM).await;
    // The cut is at 300 characters: the key starts on either side of it.
    for start in 285..305 {
        let echo = format!("{}{KEY} (echoed request)", "x".repeat(start));
        proxy.script([Fault::Failure(502, echo)]);
        let error = backend(&proxy).chat(&request()).await.unwrap_err();
        let BackendError::Status { status, body, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(*status, 502);
        assert!(!body.contains("sk-"), "key prefix at {start}: {body}");
        assert!(body.len() <= 310, "{} characters", body.len());
    }
}

#[actix_rt::test]
async fn an_answer_that_is_not_json_reaches_no_log() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let proxy = Proxy::start(NO_UPSTREAM).await;
    // A proxy's error page, sent as a success, echoing the request's headers.
    let page = format!(
        "<html>gateway error; your request: Authorization: Bearer {KEY}</html>{}",
        "y".repeat(1 << 20)
    );
    proxy.script([Fault::Answer(page)]);
    let error = backend(&proxy).chat(&request()).await.unwrap_err();

    let logs = logs.text();
    assert!(!logs.contains(KEY), "the key was logged");
    let longest = logs.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2_000, "a log line of {longest} characters");

    let message = error.to_string();
    assert!(matches!(error, BackendError::BadResponse(_)), "{message}");
    assert!(error.is_retryable());
    assert!(message.contains("not JSON"), "{message}");
    assert!(
        message.contains("[redacted]") && !message.contains(KEY),
        "{message}"
    );
    assert!(message.len() < 400, "{} characters", message.len());
}
