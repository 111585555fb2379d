//! Who may talk to the server: the token, the loopback rule and cross-site defences.
//!
//! - Without a token the server listens on loopback only, and accepts only requests whose
//!   `Host` names the loopback (so a web site cannot reach it through DNS rebinding).
//! - With a token every request carries it: `Authorization: Bearer <token>` (the scheme in
//!   any case), `X-Mosaic-Token: <token>`, the `token` query parameter, or the cookie set
//!   when a request authorised by the query parameter is answered. The page is logged in
//!   once (`/?token=...`, the address printed at start, or the login form): it is
//!   redirected to `/` with the cookie, which its script, images and event stream carry,
//!   so no address the page uses holds the token. A page asked for without the token gets
//!   a login form.
//! - Requests that change state are JSON posts (a cross-site form cannot send them without
//!   a preflight the server never answers) and must not come from another origin.

use crate::WebError;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use std::net::SocketAddr;

/// The environment variable read for the token when none is given on the command line.
pub const TOKEN_ENV: &str = "MOSAIC_TOKEN";

/// Shortest token accepted.
const MIN_TOKEN_LEN: usize = 12;

/// The token to use: `given` (from the command line) or else the [`TOKEN_ENV`] variable;
/// empty values count as none.
///
/// ```
/// assert_eq!(mosaic_web::resolve_token(Some("s3cret-token-1".into())).as_deref(), Some("s3cret-token-1"));
/// ```
pub fn resolve_token(given: Option<String>) -> Option<String> {
    given
        .or_else(|| std::env::var(TOKEN_ENV).ok())
        .filter(|t| !t.is_empty())
}

/// Refuses a non-loopback address without a token, and tokens that are weak or cannot
/// travel in URLs and cookies unchanged.
pub(crate) fn check_bind(bind: SocketAddr, token: Option<&str>) -> Result<(), WebError> {
    match token {
        None if bind.ip().is_loopback() => Ok(()),
        None => Err(WebError::TokenRequired { bind }),
        Some(token) if token.len() < MIN_TOKEN_LEN => Err(WebError::BadToken(format!(
            "it has {} characters, at least {MIN_TOKEN_LEN} are needed",
            token.len()
        ))),
        Some(token) => match token.chars().find(|c| !token_char(*c)) {
            Some(c) => Err(WebError::BadToken(format!(
                "character {c:?} is not allowed (letters, digits, `-`, `_`, `.`, `~`)"
            ))),
            None => Ok(()),
        },
    }
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~')
}

/// The server's access rules.
#[derive(Debug)]
pub(crate) struct Security {
    token: Option<String>,
    cookie: String,
}

enum Verdict {
    Allowed,
    /// Allowed by the query parameter: the answer sets the cookie.
    AllowedByQuery,
    Refused(HttpResponse),
}

impl Security {
    pub(crate) fn new(bind: SocketAddr, token: Option<String>) -> Self {
        Self {
            token,
            // Cookies are shared by every port of a host: one name per port keeps two
            // servers on one machine apart.
            cookie: format!("mosaic_token_{}", bind.port()),
        }
    }

    /// The token every request must carry, if any.
    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn verdict(&self, req: &ServiceRequest) -> Verdict {
        let headers = req.headers();
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let foreign = headers
                .get(header::ORIGIN)
                .and_then(|o| o.to_str().ok())
                .is_some_and(|origin| {
                    origin != format!("http://{host}") && origin != format!("https://{host}")
                });
            if foreign {
                return Verdict::Refused(refusal(
                    HttpResponse::Forbidden(),
                    "requests from another origin are refused",
                ));
            }
        }
        let Some(token) = &self.token else {
            return if loopback_host(host) {
                Verdict::Allowed
            } else {
                Verdict::Refused(refusal(
                    HttpResponse::Forbidden(),
                    "this server answers only requests addressed to the loopback (localhost)",
                ))
            };
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, given)| given.trim());
        let custom = headers.get("x-mosaic-token").and_then(|h| h.to_str().ok());
        let cookie = headers
            .get_all(header::COOKIE)
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie)
            .map(|(_, value)| value);
        if [bearer, custom, cookie]
            .into_iter()
            .flatten()
            .any(|given| same(given, token))
        {
            return Verdict::Allowed;
        }
        let query = query_token(req.query_string());
        if query.is_some_and(|given| same(given, token)) {
            return Verdict::AllowedByQuery;
        }
        if wants_page(req) {
            return Verdict::Refused(login_page(query.is_some()));
        }
        Verdict::Refused(
            refusal(
                HttpResponse::Unauthorized(),
                "a valid token is required (log in at the address `mosaic serve` printed, or send it as `Authorization: Bearer <token>`)",
            )
            .map_into_boxed_body(),
        )
    }

    /// The cookie that carries the token from now on.
    fn cookie(&self, token: &str) -> Option<header::HeaderValue> {
        let cookie = format!("{}={token}; Path=/; HttpOnly; SameSite=Strict", self.cookie);
        header::HeaderValue::from_str(&cookie).ok()
    }
}

/// The value of the `token` query parameter.
fn query_token(query: &str) -> Option<&str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| value)
}

/// The query without its `token` parameter.
fn query_without_token(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Whether a person's browser asks for the page (rather than a script for data).
fn wants_page(req: &ServiceRequest) -> bool {
    req.method() == Method::GET
        && req.path() == "/"
        && req
            .headers()
            .get(header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"))
}

/// The login form: a person who opened the page without the token types it in (the form
/// sends it as `/?token=...`, answered with the cookie and a redirect).
fn login_page(wrong_token: bool) -> HttpResponse {
    let notice = if wrong_token {
        "<p class=\"wrong\" role=\"alert\">That token is not the server's. Try again.</p>"
    } else {
        ""
    };
    HttpResponse::Unauthorized()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        // The page's policy refuses forms and inline styles; this page needs both.
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .body(LOGIN_PAGE.replace("{notice}", notice))
}

/// The login form's page; `{notice}` is replaced by what went wrong, if anything.
const LOGIN_PAGE: &str = include_str!("../assets/login.html");

fn refusal(mut builder: actix_web::HttpResponseBuilder, message: &str) -> HttpResponse {
    builder
        .insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"mosaic\""))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ "error": message }))
}

/// Compares without stopping at the first difference (the length is not secret).
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// Whether a `Host` header value names the loopback.
fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The middleware applying [`Security`] to every request.
pub(crate) async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(security) = req.app_data::<web::Data<Security>>().cloned() else {
        return Ok(req.into_response(HttpResponse::InternalServerError().finish()));
    };
    match security.verdict(&req) {
        Verdict::Refused(response) => Ok(req.into_response(response)),
        Verdict::Allowed => Ok(next.call(req).await?.map_into_boxed_body()),
        Verdict::AllowedByQuery => {
            let cookie = security.token.as_deref().and_then(|t| security.cookie(t));
            if req.method() == Method::GET && req.path() == "/" {
                // The page moves to an address without the token, carrying the cookie.
                let rest = query_without_token(req.query_string());
                let location = if rest.is_empty() {
                    "/".to_owned()
                } else {
                    format!("/?{rest}")
                };
                let mut redirect = HttpResponse::SeeOther();
                redirect
                    .insert_header((header::LOCATION, location))
                    .insert_header((header::CACHE_CONTROL, "no-store"));
                if let Some(cookie) = cookie {
                    redirect.insert_header((header::SET_COOKIE, cookie));
                }
                return Ok(req.into_response(redirect.finish()));
            }
            let mut response = next.call(req).await?.map_into_boxed_body();
            if let Some(cookie) = cookie {
                response
                    .response_mut()
                    .headers_mut()
                    .append(header::SET_COOKIE, cookie);
            }
            Ok(response)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rules() {
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(loopback, None).is_ok());
        assert!(matches!(
            check_bind(any, None),
            Err(WebError::TokenRequired { .. })
        ));
        assert!(check_bind(any, Some("a-long-enough-token")).is_ok());
        assert!(matches!(
            check_bind(any, Some("short")),
            Err(WebError::BadToken(_))
        ));
        let err = check_bind(any, Some("has;semicolon-inside")).unwrap_err();
        assert!(err.to_string().contains("';'"), "{err}");
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:80",
            "127.9.9.9",
        ] {
            assert!(loopback_host(host), "{host}");
        }
        for host in [
            "",
            "evil.example:8080",
            "10.0.0.1",
            "localhost.evil.example",
        ] {
            assert!(!loopback_host(host), "{host}");
        }
    }

    #[test]
    fn comparison() {
        assert!(same("abc", "abc"));
        assert!(!same("abd", "abc"));
        assert!(!same("ab", "abc"));
    }
}
