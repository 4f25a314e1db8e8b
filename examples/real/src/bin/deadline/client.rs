//! The client: one hyper 1 connection per request, driven inside the
//! request's future (dropping it closes the socket), and the wait until the
//! server has seen every connection the client opened closed.

use std::collections::HashMap;
use std::fmt::Display;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::header::HOST;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::SETTLE_LIMIT;

/// The client: where to send, and the local address of every connection it
/// opened, so that it can tell when the server has seen each one closed.
pub struct Client {
    pub addr: SocketAddr,
    pub opened: Arc<Mutex<Vec<SocketAddr>>>,
}

#[derive(Debug)]
pub struct Answer {
    pub id: u32,
    pub status: StatusCode,
}

#[derive(Debug)]
pub enum Failure {
    /// The connection, the request or its body failed on the way.
    Transport { id: u32, error: String },
    /// Not the body the server sends for this id.
    WrongBody { id: u32, body: String },
}

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport { id, error } => write!(f, "request {id}: {error}"),
            Failure::WrongBody { id, body } => {
                write!(f, "request {id}: the body {body:?} is not its own")
            }
        }
    }
}

/// A request as the stream holds it: the call, and the request's id beside
/// it, so that a request handed back unstarted (late) says which it was.
pub struct Call {
    pub id: u32,
    exchange: Pin<Box<dyn Future<Output = Result<Answer, Failure>> + Send>>,
}

impl Future for Call {
    type Output = Result<Answer, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.exchange.as_mut().poll(cx)
    }
}

impl Client {
    pub fn call(&self, id: u32) -> Call {
        Call {
            id,
            exchange: Box::pin(post_write(self.addr, Arc::clone(&self.opened), id)),
        }
    }

    /// Waits until the server has reported closed every connection the
    /// client opened (by address and count: a port may be reused); `false`
    /// if that takes longer than `SETTLE_LIMIT`.
    pub async fn wait_server_closed(&self, closed: &mut UnboundedReceiver<SocketAddr>) -> bool {
        let mut open: HashMap<SocketAddr, i64> = HashMap::new();
        for &addr in self.opened.lock().expect("not poisoned").iter() {
            *open.entry(addr).or_default() += 1;
        }
        let all_closed = async {
            // Connections the client gave up on before they were
            // established are reported too, and count below zero.
            while open.values().any(|&count| count > 0) {
                let Some(addr) = closed.next().await else {
                    return false;
                };
                *open.entry(addr).or_default() -= 1;
            }
            true
        };
        tokio::time::timeout(SETTLE_LIMIT, all_closed)
            .await
            .unwrap_or(false)
    }
}

/// One POST on a connection of its own, its answer read to the end. The
/// connection is driven inside this future rather than on a task of its own:
/// dropping the future (a cancellation at the run's deadline) closes the
/// socket at once, and the server, seeing it closed mid-request, drops the
/// handler wherever it is.
async fn post_write(
    addr: SocketAddr,
    opened: Arc<Mutex<Vec<SocketAddr>>>,
    id: u32,
) -> Result<Answer, Failure> {
    let transport = |error: &dyn Display| Failure::Transport {
        id,
        error: error.to_string(),
    };
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|error| transport(&error))?;
    tcp.set_nodelay(true).map_err(|error| transport(&error))?;
    // Recorded before a byte of the request is written: every connection
    // that may carry a request is one the reconciliation waits for.
    let local = tcp.local_addr().map_err(|error| transport(&error))?;
    opened.lock().expect("not poisoned").push(local);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|error| transport(&error))?;
    let request = Request::post(format!("/write/{id}"))
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .expect("a valid request");
    let exchange = async move {
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        // `sender` is dropped here: the connection closes once idle.
        Ok::<_, hyper::Error>((status, body))
    };
    let ((status, body), ()) =
        tokio::try_join!(exchange, connection).map_err(|error| transport(&error))?;
    if body != format!("applied {id}").as_bytes() {
        let body = String::from_utf8_lossy(&body).into_owned();
        return Err(Failure::WrongBody { id, body });
    }
    Ok(Answer { id, status })
}
