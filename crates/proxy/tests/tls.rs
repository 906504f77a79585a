//! TLS listeners: certificates chosen by SNI, HTTP/1.1 and HTTP/2 (ALPN) through the
//! engine to the echo backend, bodies byte-exact.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

struct Certs {
    a: rcgen::CertifiedKey,
    b: rcgen::CertifiedKey,
}

fn certs(dir: &std::path::Path) -> Certs {
    let a = rcgen::generate_simple_self_signed(vec!["a.test".to_string()]).unwrap();
    let b = rcgen::generate_simple_self_signed(vec!["b.test".to_string()]).unwrap();
    for (name, c) in [("a", &a), ("b", &b)] {
        std::fs::write(dir.join(format!("{name}.crt")), c.cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), c.key_pair.serialize_pem()).unwrap();
    }
    Certs { a, b }
}

fn config() -> String {
    common::EchoConfig {
        listener: r#"tls = [
  { cert = "{certs}/a.crt", key = "{certs}/a.key", server_names = ["a.test"] },
  { cert = "{certs}/b.crt", key = "{certs}/b.key", server_names = ["b.test"] },
]"#,
        rules: "SecRuleEngine On\nSecRequestBodyAccess On\n\
                SecRequestBodyLimit 1048576\nSecRequestBodyNoFilesLimit 1048576\n\
                SecRequestBodyLimitAction ProcessPartial\n\
                SecRule ARGS|REQUEST_BODY \"@contains attack\" \"id:7,phase:2,deny,status:403,log\"\n",
        ..Default::default()
    }
    .toml()
}

fn client(certs: &Certs, alpn: &[u8]) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certs.a.cert.der().clone()).unwrap();
    roots.add(certs.b.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
}

async fn setup() -> (common::Harness, Certs, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let certs = certs(dir.path());
    let text = config().replace("{certs}", &dir.path().display().to_string());
    (common::start(&text).await, certs, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_chooses_the_certificate_and_http1_works_over_tls() {
    let (h, certs, _dir) = setup().await;
    for (name, want) in [("a.test", &certs.a), ("b.test", &certs.b)] {
        let tcp = tokio::net::TcpStream::connect(h.addr).await.unwrap();
        let sn = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
        let mut tls = client(&certs, b"http/1.1").connect(sn, tcp).await.unwrap();
        let peer = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
        assert_eq!(peer.as_ref(), want.cert.der().as_ref(), "{name}");
        tls.write_all(
            format!("GET /bytes/100000 HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(out.starts_with(b"HTTP/1.1 200"));
        assert_eq!(&out[split..], common::pattern(100_000).as_slice());
    }
}

async fn h2_sender(
    h: &common::Harness,
    certs: &Certs,
) -> hyper::client::conn::http2::SendRequest<Full<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    let sn = rustls::pki_types::ServerName::try_from("a.test".to_string()).unwrap();
    let tls = client(certs, b"h2").connect(sn, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    sender
}

async fn send(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: Vec<u8>,
    with_length: bool,
) -> (u16, Vec<u8>) {
    let mut b = http::Request::builder()
        .method(method)
        .uri(format!("https://a.test{path}"));
    if with_length {
        b = b.header("content-length", body.len());
    }
    let req = b.body(Full::new(Bytes::from(body))).unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_over_tls_passes_bodies_and_blocks_attacks() {
    let (h, certs, _dir) = setup().await;
    let mut s = h2_sender(&h, &certs).await;
    let (st, body) = send(&mut s, "GET", "/bytes/3000000", Vec::new(), false).await;
    assert_eq!(st, 200);
    assert!(body == common::pattern(3_000_000));
    for (n, with_length) in [
        (0usize, true),
        (10, true),
        (5_000_000, true),
        (2_000_000, false),
    ] {
        let data = common::pattern(n as u64);
        let (st, body) = send(&mut s, "POST", "/up", data.clone(), with_length).await;
        assert_eq!(st, 200, "{n}");
        if n > 0 {
            assert!(body == data, "h2 body {n} differs");
        }
    }
    let (st, _) = send(&mut s, "GET", "/?q=attack", Vec::new(), false).await;
    assert_eq!(st, 403);
    let (st, _) = send(&mut s, "POST", "/up", b"an attack here".to_vec(), true).await;
    assert_eq!(st, 403);
    let (st, body) = send(&mut s, "GET", "/info", Vec::new(), false).await;
    assert_eq!(st, 200);
    let text = String::from_utf8_lossy(&body).to_string();
    assert!(text.contains("x-forwarded-proto: https"), "{text}");
    assert!(text.contains("host: a.test"), "{text}");
}
