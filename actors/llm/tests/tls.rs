//! The HTTP backend speaks TLS with the `ring` crypto provider and verifies certificates:
//! against a local HTTPS server whose certificate no authority signed, the handshake gets as
//! far as the certificate (which TLS 1.3 sends encrypted, so key exchange and encryption
//! worked) and the client refuses it.

use mosaic_llm::backend::{
    ApiKey, BackendError, ChatBackend, ChatMessage, ChatRequest, Constraint, OpenAiBackend, Role,
};
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A self-signed certificate for 127.0.0.1 and its key (test data only).
const CERT: &[u8] = include_bytes!("data/untrusted-cert.pem");
const KEY: &[u8] = include_bytes!("data/untrusted-key.pem");

fn server_config() -> rustls::ServerConfig {
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 with ring")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(CERT).expect("test certificate")],
            PrivateKeyDer::from_pem_slice(KEY).expect("test key"),
        )
        .expect("server configuration")
}

#[actix_rt::test]
async fn https_endpoints_get_a_verified_tls_handshake() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config()));
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("a connection");
        acceptor.accept(stream).await.map(|_| ())
    });

    let backend = OpenAiBackend::new(
        &format!("https://127.0.0.1:{port}/v1"),
        "m",
        ApiKey::none(),
        "tls",
    );
    let request = ChatRequest {
        messages: vec![ChatMessage::text(Role::User, "hello")],
        temperature: 0.0,
        max_tokens: 1,
        seed: None,
        constraint: Constraint::None,
        passthrough: Default::default(),
    };
    let error = backend
        .chat(&request)
        .await
        .expect_err("an untrusted server");
    assert!(matches!(error, BackendError::Connect(_)), "{error}");

    let refused = server
        .await
        .expect("the server task")
        .expect_err("the client refuses the certificate");
    // A certificate alert: the client got as far as the certificate and would not trust it.
    let alert = refused
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    assert!(
        matches!(
            alert,
            Some(rustls::Error::AlertReceived(
                rustls::AlertDescription::UnknownCA
                    | rustls::AlertDescription::CertificateUnknown
                    | rustls::AlertDescription::BadCertificate
            ))
        ),
        "{refused}"
    );
}
