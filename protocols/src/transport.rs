//! The same frames over TCP and Unix sockets: a worker listens, the orchestrator connects.
//!
//! ```
//! use mosaic_protocols::transport::Endpoint;
//! assert_eq!(
//!     Endpoint::parse("tcp://127.0.0.1:7000").unwrap(),
//!     Endpoint::Tcp("127.0.0.1:7000".into())
//! );
//! assert_eq!(
//!     Endpoint::parse("unix:///tmp/env.sock").unwrap(),
//!     Endpoint::Unix("/tmp/env.sock".into())
//! );
//! assert!(Endpoint::parse("http://x").is_err());
//! ```

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a listening worker is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `tcp://host:port`.
    Tcp(String),
    /// `unix:///path/to/socket`.
    Unix(PathBuf),
}

/// An address that is not `tcp://host:port` or `unix://path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a worker address (expected tcp://host:port or unix:///path)")]
pub struct EndpointError(pub String);

impl Endpoint {
    /// Parses `tcp://host:port` or `unix://path`.
    pub fn parse(address: &str) -> Result<Self, EndpointError> {
        let bad = || EndpointError(address.to_owned());
        if let Some(rest) = address.strip_prefix("tcp://") {
            let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad());
            }
            Ok(Endpoint::Tcp(rest.to_owned()))
        } else if let Some(path) = address.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(bad());
            }
            Ok(Endpoint::Unix(PathBuf::from(path)))
        } else {
            Err(bad())
        }
    }

    /// Connects, retrying until `timeout` while the worker is not listening yet.
    pub fn connect(&self, timeout: Duration) -> io::Result<Stream> {
        let deadline = Instant::now() + timeout;
        loop {
            let attempt = match self {
                Endpoint::Tcp(address) => TcpStream::connect(address).map(|s| {
                    // Small request/reply frames: do not wait to coalesce them.
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                }),
                Endpoint::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            };
            match attempt {
                Ok(stream) => return Ok(stream),
                Err(e) if Instant::now() >= deadline => {
                    return Err(io::Error::new(e.kind(), format!("{self}: {e}")));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(address) => write!(f, "tcp://{address}"),
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

/// A connected socket.
#[derive(Debug)]
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// Unix domain socket.
    Unix(UnixStream),
}

impl Stream {
    /// A second handle on the same socket (one for reading, one for writing).
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Closes both directions (wakes a reader blocked on the other handle).
    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{FrameReader, FrameWriter};
    use crate::message::{Ack, Message};

    /// Serves one connection: answers every `ping` with a `pong`.
    fn pong_server(mut reader: FrameReader<Stream>, mut writer: FrameWriter<Stream>) {
        while let Ok(Some(line)) = reader.next_line() {
            if let Ok(Message::Ping(Ack { id })) = Message::decode(&line) {
                let _ = writer.send(&Message::Pong(Ack { id }));
            }
        }
    }

    fn exchange(endpoint: &Endpoint) {
        let stream = endpoint.connect(Duration::from_secs(5)).unwrap();
        let mut writer = FrameWriter::new(stream.try_clone().unwrap());
        let mut reader = FrameReader::new(stream.try_clone().unwrap(), 1024);
        for id in 0..3 {
            writer.send(&Message::Ping(Ack { id })).unwrap();
            let line = reader.next_line().unwrap().unwrap();
            assert_eq!(Message::decode(&line).unwrap(), Message::Pong(Ack { id }));
        }
        stream.shutdown().unwrap();
    }

    #[test]
    fn frames_travel_over_tcp() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint =
            Endpoint::parse(&format!("tcp://{}", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let socket = Stream::Tcp(socket);
            pong_server(
                FrameReader::new(socket.try_clone().unwrap(), 1024),
                FrameWriter::new(socket),
            );
        });
        exchange(&endpoint);
        server.join().unwrap();
    }

    #[test]
    fn frames_travel_over_unix_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sock");
        let endpoint = Endpoint::parse(&format!("unix://{}", path.display())).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let socket = Stream::Unix(socket);
            pong_server(
                FrameReader::new(socket.try_clone().unwrap(), 1024),
                FrameWriter::new(socket),
            );
        });
        exchange(&endpoint);
        server.join().unwrap();
        assert_eq!(endpoint.to_string(), format!("unix://{}", path.display()));
    }

    #[test]
    fn bad_addresses_and_refused_connections_are_errors() {
        for bad in [
            "tcp://",
            "tcp://host",
            "tcp://:80",
            "tcp://h:99999",
            "unix://",
            "x",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let missing = Endpoint::Unix(dir.path().join("none.sock"));
        let err = missing.connect(Duration::from_millis(60)).unwrap_err();
        assert!(err.to_string().contains("none.sock"), "{err}");
    }
}
