//! The server: a hyper 1 server on 127.0.0.1 that applies one write per
//! request after the time the plan gives it, and keeps a journal of the ids
//! it applied.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc::UnboundedSender;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};

use crate::plan::handling_time;

/// The server's own record of the writes it applied: a request id per write,
/// in the order applied.
#[derive(Default)]
pub struct Journal(Mutex<Vec<u32>>);

impl Journal {
    fn apply(&self, id: u32) {
        self.0.lock().expect("not poisoned").push(id);
    }

    /// How many times the server applied each id.
    pub fn applied(&self) -> HashMap<u32, u32> {
        let mut applied = HashMap::new();
        for &id in self.0.lock().expect("not poisoned").iter() {
            *applied.entry(id).or_default() += 1;
        }
        applied
    }
}

/// Starts the server on an ephemeral port of 127.0.0.1; it runs until the
/// program ends. `POST /write/{id}` applies the write for `id` and answers
/// `applied {id}`. Each connection, once closed (and every handler on it done
/// or dropped), is reported on `closed` by its peer's address.
pub async fn start_server(
    journal: Arc<Journal>,
    closed: UnboundedSender<SocketAddr>,
) -> SocketAddr {
    real::serve(
        move |request| handle(Arc::clone(&journal), request),
        // The receiver may be gone once the program is done with it.
        move |peer| {
            let _ = closed.unbounded_send(peer);
        },
    )
    .await
}

async fn handle(
    journal: Arc<Journal>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(id) = route(request.method(), request.uri().path()) else {
        let mut missing = Response::new(Full::new(Bytes::from_static(b"no such route")));
        *missing.status_mut() = StatusCode::NOT_FOUND;
        return Ok(missing);
    };
    let (before_write, after_write) = handling_time(id);
    tokio::time::sleep(before_write).await; // the handler's own work, or a lock it waits for
    journal.apply(id);
    tokio::time::sleep(after_write).await; // a replica's acknowledgement
    Ok(Response::new(Full::new(Bytes::from(format!(
        "applied {id}"
    )))))
}

fn route(method: &Method, path: &str) -> Option<u32> {
    let id = path.strip_prefix("/write/")?;
    (method == Method::POST).then(|| id.parse().ok())?
}
