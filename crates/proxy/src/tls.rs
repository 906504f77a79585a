//! TLS with rustls (ring provider): certificates from PEM files, chosen by SNI, ALPN
//! `h2` then `http/1.1`.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use crate::config::{Certificate, ConfigError, Source};

/// Chooses a certificate by SNI; the first configured one is the default.
#[derive(Debug)]
struct SniResolver {
    by_name: HashMap<String, Arc<CertifiedKey>>,
    default: Arc<CertifiedKey>,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let key = hello
            .server_name()
            .and_then(|n| self.by_name.get(&n.to_ascii_lowercase()))
            .unwrap_or(&self.default);
        Some(key.clone())
    }
}

fn load_one(source: &Source, c: &Certificate) -> Result<CertifiedKey, ConfigError> {
    let base = source.base_dir();
    let resolve = |p: &std::path::Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let cert_path = resolve(c.cert.get_ref());
    let key_path = resolve(c.key.get_ref());
    let cert_pem = std::fs::read(&cert_path).map_err(|e| {
        source.error(
            c.cert.span(),
            format!("listener.tls.cert: {}: {e}", cert_path.display()),
        )
    })?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| source.error(c.cert.span(), format!("listener.tls.cert: {e}")))?;
    if certs.is_empty() {
        return Err(source.error(
            c.cert.span(),
            "listener.tls.cert: no certificate in the file",
        ));
    }
    let key_pem = std::fs::read(&key_path).map_err(|e| {
        source.error(
            c.key.span(),
            format!("listener.tls.key: {}: {e}", key_path.display()),
        )
    })?;
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| source.error(c.key.span(), format!("listener.tls.key: {e}")))?
        .ok_or_else(|| {
            source.error(c.key.span(), "listener.tls.key: no private key in the file")
        })?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| source.error(c.key.span(), format!("listener.tls.key: {e}")))?;
    Ok(CertifiedKey::new(certs, signer))
}

/// Builds the acceptor for a listener's certificates.
pub fn acceptor(source: &Source, certs: &[Certificate]) -> Result<TlsAcceptor, ConfigError> {
    let mut by_name = HashMap::new();
    let mut default = None;
    for c in certs {
        let ck = Arc::new(load_one(source, c)?);
        for n in &c.server_names {
            by_name.insert(n.to_ascii_lowercase(), ck.clone());
        }
        default.get_or_insert(ck);
    }
    let Some(default) = default else {
        return Err(source.error(0..0, "listener.tls: no certificate"));
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| source.error(0..0, format!("listener.tls: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SniResolver { by_name, default }));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
