//! HTTP routes: the page, the live board (state, events, frames, controls), the runs
//! browser.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/` | the page |
//! | GET | `/assets/{file}` | its scripts, style sheets and icon |
//! | GET | `/api/live` | the experiment's operator configurations and agents |
//! | GET | `/api/live/state` | the board now |
//! | GET | `/api/live/events` | the board after every change (server-sent events) |
//! | GET | `/api/live/{operator}/frame` | the latest frame (PNG) |
//! | POST | `/api/live/reset` `{seed}` | Reset All |
//! | POST | `/api/live/step` `{}` | Step All |
//! | POST | `/api/live/run` `{pace_ms}` | Run (or change the pace) |
//! | POST | `/api/live/pause` `{}` | Pause |
//! | POST | `/api/live/choose` `{operator, agent, action}` | a human player's move |
//! | GET | `/api/runs` | the recorded runs |
//! | GET | `/api/runs/{run}` | a run's report and episodes |
//! | GET | `/api/runs/{run}/charts` | what its charts draw: returns per episode, training curves |
//! | GET | `/api/runs/{run}/episodes/{operator}/{episode}` | an episode's records step by step, and its messages |
//! | GET | `/api/runs/{run}/replay/{operator}/{episode}` | a replay's timeline |
//! | GET | `/api/runs/{run}/replay/{operator}/{episode}/frames/{step}` | its frames (PNG) |

use crate::live::{ControlError, Live};
use crate::runs::{Runs, RunsError};
use crate::security::{self, Security};
use crate::{MAX_BODY_BYTES, WebError, WebServer, assets};
use actix_web::dev::ServiceResponse;
use actix_web::error::JsonPayloadError;
use actix_web::http::{StatusCode, header};
use actix_web::middleware::{DefaultHeaders, ErrorHandlerResponse, ErrorHandlers, from_fn};
use actix_web::web::{self, Bytes, Data, Json, Path};
use actix_web::{App, HttpResponse, HttpServer, ResponseError};
use mosaic_actors::human::ChoiceError;
use serde::Deserialize;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The slowest pace of Run.
const MAX_PACE_MS: u64 = 60_000;
/// A comment line keeps idle event streams open through proxies.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Board changes closer together than this reach a viewer as one update.
const COALESCE: Duration = Duration::from_millis(30);

struct AppState {
    live: Option<Arc<Live>>,
    runs: Arc<Runs>,
}

impl AppState {
    fn live(&self) -> Result<&Arc<Live>, ApiError> {
        self.live.as_ref().ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "no experiment loaded: start the server with an experiment file",
            )
        })
    }
}

/// An error answer: `{"error": message}` with a fitting status.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status)
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(serde_json::json!({ "error": self.message }))
    }
}

impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> Self {
        let status = match &e {
            ControlError::Conflict(_) | ControlError::Choice(ChoiceError::NotAwaited { .. }) => {
                StatusCode::CONFLICT
            }
            ControlError::Unknown(_) => StatusCode::NOT_FOUND,
            ControlError::Choice(ChoiceError::Illegal { .. }) => StatusCode::BAD_REQUEST,
        };
        Self::new(status, e.to_string())
    }
}

impl From<actix_web::error::BlockingError> for ApiError {
    fn from(e: actix_web::error::BlockingError) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

fn json_error(error: JsonPayloadError, _: &actix_web::HttpRequest) -> actix_web::Error {
    let status = match &error {
        JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
            StatusCode::PAYLOAD_TOO_LARGE
        }
        JsonPayloadError::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, format!("request body: {error}")).into()
}

/// Answers a path that does not parse (e.g. an episode that is not a number) in JSON.
fn path_error(error: actix_web::error::PathError, _: &actix_web::HttpRequest) -> actix_web::Error {
    ApiError::new(StatusCode::NOT_FOUND, format!("not found: {error}")).into()
}

/// Answers a query string that does not parse (a missing or unknown parameter) in JSON.
fn query_error(
    error: actix_web::error::QueryPayloadError,
    _: &actix_web::HttpRequest,
) -> actix_web::Error {
    ApiError::new(StatusCode::BAD_REQUEST, format!("query: {error}")).into()
}

/// Turns the error answers the framework writes itself (a wrong method, an empty body) into
/// this server's `{"error": ...}`; the login page stays a page.
fn json_errors<B>(answer: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let typed = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/html"));
    if typed {
        return Ok(ErrorHandlerResponse::Response(answer.map_into_left_body()));
    }
    let status = answer.status();
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed",
        _ => status.canonical_reason().unwrap_or("error"),
    };
    let (request, _) = answer.into_parts();
    let json = ApiError::new(status, message).error_response();
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(request, json).map_into_right_body(),
    ))
}

/// Binds `bind` and builds the server (not yet running).
pub(crate) fn bind(
    bind: SocketAddr,
    security: Security,
    live: Option<Arc<Live>>,
    runs: Runs,
) -> Result<WebServer, WebError> {
    let token = security.token().map(str::to_owned);
    let security = Data::new(security);
    let state = Data::new(AppState {
        live: live.clone(),
        runs: Arc::new(runs),
    });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(security.clone())
            .app_data(state.clone())
            .app_data(
                web::JsonConfig::default()
                    .limit(MAX_BODY_BYTES)
                    .error_handler(json_error),
            )
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .app_data(web::PathConfig::default().error_handler(path_error))
            .app_data(web::QueryConfig::default().error_handler(query_error))
            .wrap(from_fn(security::guard))
            .wrap(ErrorHandlers::new().default_handler(json_errors))
            .wrap(
                DefaultHeaders::new()
                    .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                    .add((header::X_FRAME_OPTIONS, "DENY"))
                    .add((header::REFERRER_POLICY, "no-referrer"))
                    .add((
                        header::CONTENT_SECURITY_POLICY,
                        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
                         base-uri 'none'; form-action 'none'",
                    )),
            )
            .route("/", web::get().to(index))
            .route("/assets/{file}", web::get().to(asset))
            .service(
                web::scope("/api/live")
                    .route("", web::get().to(live_setup))
                    .route("/state", web::get().to(live_state))
                    .route("/events", web::get().to(live_events))
                    .route("/reset", web::post().to(live_reset))
                    .route("/step", web::post().to(live_step))
                    .route("/run", web::post().to(live_run))
                    .route("/pause", web::post().to(live_pause))
                    .route("/choose", web::post().to(live_choose))
                    .route("/{operator}/frame", web::get().to(live_frame)),
            )
            .route("/api/compare", web::get().to(compare))
            .service(
                web::scope("/api/runs")
                    .route("", web::get().to(runs_list))
                    .route("/{run}", web::get().to(run_report))
                    .route("/{run}/charts", web::get().to(run_charts))
                    .route(
                        "/{run}/episodes/{operator}/{episode}",
                        web::get().to(episode_view),
                    )
                    .route("/{run}/replay/{operator}/{episode}", web::get().to(replay))
                    .route(
                        "/{run}/replay/{operator}/{episode}/frames/{step}",
                        web::get().to(replay_frame),
                    ),
            )
            .default_service(web::to(not_found))
    })
    .workers(2)
    // Event streams never end by themselves: do not wait long for them on shutdown.
    .shutdown_timeout(1)
    // Signals stop the server through `WebServer::run`, which then closes the recording
    // (the server's own handling would stop the whole actix system first).
    .disable_signals()
    .bind(bind)
    .map_err(|source| WebError::Bind { bind, source })?;
    let addr = server.addrs().first().copied().unwrap_or(bind);
    Ok(WebServer {
        addr,
        server: server.run(),
        live,
        token,
    })
}

async fn index() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(assets::INDEX)
}

async fn asset(file: Path<String>) -> Result<HttpResponse, ApiError> {
    let asset = assets::find(&file)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no asset `{file}`")))?;
    Ok(HttpResponse::Ok()
        .content_type(asset.content_type)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(asset.body))
}

async fn not_found() -> HttpResponse {
    ApiError::new(StatusCode::NOT_FOUND, "not found").error_response()
}

async fn live_setup(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(no_store().json(state.live()?.setup()))
}

async fn live_state(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(no_store().json(state.live()?.snapshot()))
}

fn no_store() -> actix_web::HttpResponseBuilder {
    let mut builder = HttpResponse::Ok();
    builder.insert_header((header::CACHE_CONTROL, "no-store"));
    builder
}

async fn live_events(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    let live = state.live()?.clone();
    let (board, humans) = live.subscribe();
    let stream = futures::stream::unfold(
        (live, board, humans, true),
        |(live, mut board, mut humans, first)| async move {
            if !first {
                tokio::time::sleep(COALESCE).await;
                tokio::select! {
                    changed = board.changed() => changed.ok()?,
                    changed = humans.changed() => changed.ok()?,
                    () = tokio::time::sleep(KEEP_ALIVE) => {
                        let ping = Bytes::from_static(b": keep-alive\n\n");
                        return Some((Ok::<_, Infallible>(ping), (live, board, humans, false)));
                    }
                }
            }
            board.borrow_and_update();
            humans.borrow_and_update();
            let event = format!("event: state\ndata: {}\n\n", live.snapshot());
            Some((Ok(Bytes::from(event)), (live, board, humans, false)))
        },
    );
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(stream))
}

async fn live_frame(
    state: Data<AppState>,
    operator: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let frame = state.live()?.frame(&operator)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("`{operator}` has no frame (its environment draws none)"),
        )
    })?;
    Ok(HttpResponse::Ok()
        .content_type("image/png")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(frame.as_ref().clone()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetBody {
    seed: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunBody {
    pace_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChooseBody {
    operator: String,
    agent: usize,
    action: u32,
}

fn accepted() -> HttpResponse {
    HttpResponse::Accepted().json(serde_json::json!({ "ok": true }))
}

async fn live_reset(
    state: Data<AppState>,
    body: Json<ResetBody>,
) -> Result<HttpResponse, ApiError> {
    let live = state.live()?.clone();
    // The outcome reaches the page through the board (a reset waits for steps in flight).
    actix::spawn(async move {
        if let Err(error) = live.reset(body.seed).await {
            tracing::warn!(%error, "Reset All failed");
        }
    });
    Ok(accepted())
}

async fn live_step(state: Data<AppState>, _: Json<Empty>) -> Result<HttpResponse, ApiError> {
    state.live()?.step()?;
    Ok(accepted())
}

async fn live_run(state: Data<AppState>, body: Json<RunBody>) -> Result<HttpResponse, ApiError> {
    if body.pace_ms > MAX_PACE_MS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("pace_ms must be at most {MAX_PACE_MS}"),
        ));
    }
    state.live()?.run(body.pace_ms)?;
    Ok(accepted())
}

async fn live_pause(state: Data<AppState>, _: Json<Empty>) -> Result<HttpResponse, ApiError> {
    state.live()?.pause();
    Ok(accepted())
}

async fn live_choose(
    state: Data<AppState>,
    body: Json<ChooseBody>,
) -> Result<HttpResponse, ApiError> {
    state
        .live()?
        .choose(&body.operator, body.agent, body.action)?;
    Ok(accepted())
}

/// Runs `work` on the runs browser off the server's threads; its error answers with the
/// fitting status and a message without server paths.
async fn with_runs<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Runs) -> Result<T, RunsError> + Send + 'static,
) -> Result<T, ApiError> {
    let runs = state.runs.clone();
    web::block(move || work(&runs)).await?.map_err(|error| {
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, state.runs.public_message(&error))
    })
}

async fn runs_list(state: Data<AppState>) -> Result<HttpResponse, ApiError> {
    let list = with_runs(&state, Runs::list).await?;
    Ok(no_store().json(list))
}

/// `?runs=A,B,...` or `?runs=A&operators=X,Y`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareQuery {
    runs: String,
    operators: Option<String>,
}

async fn compare(
    state: Data<AppState>,
    query: web::Query<CompareQuery>,
) -> Result<HttpResponse, ApiError> {
    let CompareQuery { runs, operators } = query.into_inner();
    let comparison = with_runs(&state, move |browser| {
        let names: Vec<&str> = runs.split(',').collect();
        let operators = match operators
            .as_deref()
            .map(|o| o.split(',').collect::<Vec<_>>())
        {
            None => None,
            Some(ops) => match ops.as_slice() {
                [a, b] => Some([*a, *b]),
                _ => return Err(RunsError::CompareWhat),
            },
        };
        browser.compare(&names, operators)
    })
    .await?;
    Ok(no_store().json(comparison))
}

async fn run_report(state: Data<AppState>, run: Path<String>) -> Result<HttpResponse, ApiError> {
    let report = with_runs(&state, move |runs| runs.report(&run)).await?;
    Ok(no_store().json(report.json()))
}

async fn run_charts(state: Data<AppState>, run: Path<String>) -> Result<HttpResponse, ApiError> {
    let report = with_runs(&state, move |runs| runs.report(&run)).await?;
    Ok(no_store().json(report.charts()))
}

async fn episode_view(
    state: Data<AppState>,
    path: Path<(String, String, u32)>,
) -> Result<HttpResponse, ApiError> {
    let (run, operator, episode) = path.into_inner();
    let view = with_runs(&state, move |runs| runs.episode(&run, &operator, episode)).await?;
    Ok(no_store().json(view))
}

async fn replay(
    state: Data<AppState>,
    path: Path<(String, String, u32)>,
) -> Result<HttpResponse, ApiError> {
    let (run, operator, episode) = path.into_inner();
    let replay = with_runs(&state, move |runs| runs.replay(&run, &operator, episode)).await?;
    Ok(no_store().json(&*replay))
}

async fn replay_frame(
    state: Data<AppState>,
    path: Path<(String, String, u32, usize)>,
) -> Result<HttpResponse, ApiError> {
    let (run, operator, episode, step) = path.into_inner();
    let replay = with_runs(&state, move |runs| runs.replay(&run, &operator, episode)).await?;
    let frame = replay.frame(step).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("the replay has no frame {step}"),
        )
    })?;
    Ok(HttpResponse::Ok()
        .content_type("image/png")
        // A replay's frames never change.
        .insert_header((header::CACHE_CONTROL, "private, max-age=3600"))
        .body(frame.to_vec()))
}
