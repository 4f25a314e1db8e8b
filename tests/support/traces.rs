//! A `tracing` subscriber that keeps every event with the spans entered on
//! its thread when it was emitted, innermost last: enough to check where a
//! future logged, without a subscriber crate.
//!
//! [`Traces::scope`] makes it the thread's default (for a test whose tasks
//! run on its own thread, as on the `StepExecutor`); [`Traces::global`] is
//! the process-wide one, for tasks on a runtime's threads, and keeps only
//! the events of one target, so that other tests' events stay out.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use tracing_core::span::Current;

use super::gate::lock;

/// One event: its target, its fields (the message under `message`), and the
/// names of the spans entered on its thread, outermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub target: String,
    pub fields: BTreeMap<String, String>,
    pub spans: Vec<String>,
}

/// Every event seen, kept in order.
#[derive(Clone, Default)]
pub struct Traces {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Keep only the events of this target, if set.
    target: Option<&'static str>,
    next_id: AtomicU64,
    spans: Mutex<BTreeMap<u64, &'static Metadata<'static>>>,
    events: Mutex<Vec<Logged>>,
}

thread_local! {
    /// The spans entered on this thread, innermost last.
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Traces {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with this subscriber as the thread's default.
    pub fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        tracing::subscriber::with_default(self.clone(), f)
    }

    /// The process-wide subscriber, set on the first call, keeping the events
    /// of `target` only (one target per test binary).
    pub fn global(target: &'static str) -> Self {
        static GLOBAL: OnceLock<Traces> = OnceLock::new();
        let traces = GLOBAL.get_or_init(|| {
            let traces = Traces {
                inner: Arc::new(Inner {
                    target: Some(target),
                    ..Inner::default()
                }),
            };
            tracing::subscriber::set_global_default(traces.clone())
                .expect("no other global subscriber in this binary");
            traces
        });
        assert_eq!(traces.inner.target, Some(target), "one target per binary");
        traces.clone()
    }

    /// Every event kept so far.
    pub fn events(&self) -> Vec<Logged> {
        lock(&self.inner.events).clone()
    }
}

/// Collects an event's fields as text.
struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Traces {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        lock(&self.inner.spans).insert(id, span.metadata());
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let target = event.metadata().target();
        if self.inner.target.is_some_and(|kept| kept != target) {
            return;
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let known = lock(&self.inner.spans);
        let spans = ENTERED.with(|entered| {
            entered
                .borrow()
                .iter()
                .map(|id| known.get(id).map_or("?", |span| span.name()).to_string())
                .collect()
        });
        drop(known);
        lock(&self.inner.events).push(Logged {
            target: target.to_string(),
            fields,
            spans,
        });
    }

    /// The innermost span entered on this thread: what `Span::current()`
    /// returns, and so what `spawn_on` keeps.
    fn current_span(&self) -> Current {
        let innermost = ENTERED.with(|entered| entered.borrow().last().copied());
        match innermost.and_then(|id| Some((id, *lock(&self.inner.spans).get(&id)?))) {
            Some((id, metadata)) => Current::new(Id::from_u64(id), metadata),
            None => Current::none(),
        }
    }

    fn enter(&self, span: &Id) {
        ENTERED.with(|entered| entered.borrow_mut().push(span.into_u64()));
    }

    fn exit(&self, span: &Id) {
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if let Some(at) = entered.iter().rposition(|&id| id == span.into_u64()) {
                entered.remove(at);
            }
        });
    }
}
