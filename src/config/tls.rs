//! TLS to a PostgreSQL server, as libpq's `sslmode` and `sslrootcert` ask for it — in the URL's
//! query (`?sslmode=verify-full&sslrootcert=/etc/abxd/db-ca.pem`) or, where the URL is silent,
//! from `PGSSLMODE` and `PGSSLROOTCERT`.
//!
//! Invariants, libpq's own (`libpq-connect(3)`, "SSL support"):
//! - `disable`: never TLS; `allow`, `prefer` (the default): TLS if the server offers it;
//!   `require`, `verify-ca`, `verify-full`: TLS or no connection. (A Unix socket never has TLS;
//!   the server refuses it there.)
//! - `verify-full` checks the server's certificate and its name against the host connected to;
//!   `verify-ca` its certificate only; `require` and `prefer` check nothing — unless a root
//!   certificate is named, when they check as `verify-ca` does.
//! - A named root certificate (PEM) is the only one trusted; with none, the system's are (where
//!   libpq would look for `~/.postgresql/root.crt`).
//! - With `disable` no TLS library takes part at all. TLS is rustls (with ring): nothing is
//!   linked that a process never uses (OpenSSL, linked dynamically, cost every abxd process
//!   over a MiB of PSS for its relocations).
//!
//! Client certificates (`sslcert`, `sslkey`) are not supported: a URL naming them is refused.

use std::path::PathBuf;
use std::sync::Arc;

/// What libpq's `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<SslMode, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode {other:?} is not one of disable, allow, prefer, require, \
                     verify-ca, verify-full"
                ))
            }
        })
    }
}

/// How to secure a connection to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    mode: SslMode,
    root_cert: Option<PathBuf>,
}

/// Keys of libpq's the client library does not know (besides these, it knows `sslmode` but not
/// all its values, and not `sslrootcert`: both are read here).
const UNSUPPORTED: [&str; 3] = ["sslcert", "sslkey", "sslpassword"];

impl Tls {
    /// Takes the TLS settings out of `url` (completed by `env`, as `PGSSLMODE`,
    /// `PGSSLROOTCERT`): returns the URL without them, for the client library, and the settings.
    pub(crate) fn take_from(
        url: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(String, Tls), String> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let (mut mode, mut root_cert) = (None, None);
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "sslmode" => mode = Some(value.to_string()),
                "sslrootcert" => root_cert = Some(value.to_string()),
                key if UNSUPPORTED.contains(&key) => {
                    return Err(format!(
                        "{key}: client certificates are not supported (use a password)"
                    ))
                }
                _ => kept.push(pair),
            }
        }
        let mode = mode.or_else(|| env("PGSSLMODE"));
        let root_cert = root_cert.or_else(|| env("PGSSLROOTCERT"));
        let tls = Tls {
            mode: mode
                .as_deref()
                .map_or(Ok(SslMode::Prefer), SslMode::parse)?,
            root_cert: root_cert.filter(|path| !path.is_empty()).map(PathBuf::from),
        };
        let url = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok((url, tls))
    }

    /// What the client library is told: whether to ask for TLS, and whether to insist.
    pub(crate) fn client_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Allow | SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }

    /// Whether connections ask for TLS at all (else they are made without a TLS library).
    pub(crate) fn wanted(&self) -> bool {
        self.mode != SslMode::Disable
    }

    /// The TLS connector that checks what the mode asks for, or what is wrong (a root
    /// certificate that cannot be read).
    pub(crate) fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let checks_ca = matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyFull)
            || self.root_cert.is_some();
        let webpki = match checks_ca {
            false => None,
            true => {
                let roots = Arc::new(self.roots()?);
                let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    roots,
                    provider.clone(),
                )
                .build()
                .map_err(|err| format!("cannot set TLS up: {err}"))?;
                Some(verifier)
            }
        };
        let checks = Checks {
            webpki,
            name: self.mode == SslMode::VerifyFull,
            provider: provider.clone(),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| format!("cannot set TLS up: {err}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(checks))
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }

    /// The roots trusted: the named root certificate's file (PEM, every certificate in it), else
    /// the system's.
    fn roots(&self) -> Result<rustls::RootCertStore, String> {
        use rustls::pki_types::{pem::PemObject, CertificateDer};
        let mut roots = rustls::RootCertStore::empty();
        let certificates: Vec<CertificateDer<'static>> = match &self.root_cert {
            Some(path) => CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<_, _>>())
                .map_err(|err| match err {
                    rustls::pki_types::pem::Error::Io(err) => {
                        format!("cannot read the root certificate {}: {err}", path.display())
                    }
                    err => format!("{} is not a PEM certificate: {err}", path.display()),
                })?,
            None => rustls_native_certs::load_native_certs().certs,
        };
        let (added, _) = roots.add_parsable_certificates(certificates);
        if added == 0 {
            return Err(match &self.root_cert {
                Some(path) => format!("{} holds no certificate", path.display()),
                None => "no system root certificate found (name one: sslrootcert)".into(),
            });
        }
        Ok(roots)
    }
}

/// What is checked of a server's certificate: its chain to a trusted root (`webpki`, if any)
/// and its name (`name`); the handshake's signatures always.
#[derive(Debug)]
struct Checks {
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    name: bool,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Checks {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        let Some(webpki) = &self.webpki else {
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        };
        let checked =
            webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match checked {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_tls_keys_leave_the_url_and_the_rest_stays() {
        let (url, tls) = Tls::take_from(
            "postgres://abxd@db/abxd?sslmode=verify-full&connect_timeout=5&sslrootcert=/ca.pem",
            no_env,
        )
        .unwrap();
        assert_eq!(url, "postgres://abxd@db/abxd?connect_timeout=5");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.root_cert, Some(PathBuf::from("/ca.pem")));
        assert_eq!(tls.client_mode(), postgres::config::SslMode::Require);
    }

    #[test]
    fn the_environment_fills_in_what_the_url_leaves_out_and_prefer_is_the_default() {
        let env = |name: &str| (name == "PGSSLMODE").then(|| "require".to_string());
        let (url, tls) = Tls::take_from("postgres://db/abxd?sslmode=disable", env).unwrap();
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgres://db/abxd", SslMode::Disable)
        );
        let (_, tls) = Tls::take_from("postgres://db/abxd", env).unwrap();
        assert_eq!(tls.mode, SslMode::Require);
        let (_, tls) = Tls::take_from("postgres://db/abxd", no_env).unwrap();
        assert_eq!(tls.client_mode(), postgres::config::SslMode::Prefer);
    }

    #[test]
    fn an_unknown_mode_a_client_certificate_and_an_unreadable_root_are_refused_by_name() {
        let err = Tls::take_from("postgres://db/abxd?sslmode=verify", no_env).unwrap_err();
        assert!(err.contains("\"verify\" is not one of"), "{err}");
        let err = Tls::take_from("postgres://db/abxd?sslcert=/c.pem", no_env).unwrap_err();
        assert!(err.contains("sslcert: client certificates"), "{err}");
        let (_, tls) =
            Tls::take_from("postgres://db/a?sslrootcert=/nonexistent.pem", no_env).unwrap();
        let err = tls.connector().err().unwrap();
        assert!(
            err.contains("cannot read the root certificate /nonexistent.pem"),
            "{err}"
        );
    }
}
