//! Shared by the tests that run the OAuth 2.1 authorization server built from the MCP Python
//! SDK's own `mcp.server.auth` (interop/mcp-python/oauth_server.py, the SDK pinned in
//! interop/mcp-python/requirements.txt) over HTTPS: a CA made here (rcgen), certificates it
//! issues (for the authorization server, and for a test's own HTTPS servers), and the
//! server's process. The including test has `mod support` (tests/support/interop.rs).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

use super::support;

/// A certificate authority made for one test: its certificate (DER and PEM), and what signs
/// the certificates it issues.
pub struct TestCa {
    /// The CA's certificate, DER: what a client trusts.
    pub der: Vec<u8>,
    /// The CA's certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate a [`TestCa`] issued: the chain (leaf, then the CA) and the leaf's key, PEM.
pub struct Issued {
    /// The leaf's certificate, then the CA's.
    pub chain_pem: String,
    /// The leaf's certificate, DER.
    pub leaf_der: Vec<u8>,
    /// The leaf's private key (PKCS#8), DER.
    pub key_der: Vec<u8>,
    /// The leaf's private key, PEM.
    pub key_pem: String,
}

impl TestCa {
    /// A new CA, named `name`.
    pub fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            der: cert.der().to_vec(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for `127.0.0.1` and `localhost`, issued by this CA.
    pub fn issue(&self) -> Issued {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        let leaf = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            chain_pem: leaf.pem() + &self.pem,
            leaf_der: leaf.der().to_vec(),
            key_der: key.serialize_der(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// The SDK's authorization server, running, on a free port of 127.0.0.1 over HTTPS.
pub struct AuthServer {
    _process: support::Running,
    /// Its port.
    pub port: u16,
}

impl AuthServer {
    /// Starts it with a certificate `ca` issues (files under `$CARGO_TARGET_TMPDIR/<name>`),
    /// `args` after the port and TLS options (`--access-ttl S`, `--jwt-secret S`); waits
    /// until it listens.
    pub fn start(crate_dir: &str, name: &str, ca: &TestCa, args: &[&str]) -> AuthServer {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let issued = ca.issue();
        let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_file, &issued.chain_pem).unwrap();
        std::fs::write(&key_file, &issued.key_pem).unwrap();
        let sdk = support::pip_install(crate_dir, "mcp-python");
        let script = support::interop(crate_dir, "mcp-python").join("oauth_server.py");
        let mut process = support::Running(
            Command::new("python3")
                .arg(script)
                .args(["0", "--tls"])
                .args([&cert_file, &key_file])
                .args(args)
                .env("PYTHONPATH", sdk)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("python3 runs the SDK's authorization server"),
        );
        let stdout = process.0.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the SDK's authorization server says where it listens");
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("not a port: {line:?}"))
            .parse()
            .unwrap();
        AuthServer {
            _process: process,
            port,
        }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}
