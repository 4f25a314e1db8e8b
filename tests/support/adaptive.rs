//! A scripted adaptive controller, for the adaptive tests of both modes.

use std::sync::{Arc, Mutex};

use bounded_buffered::{Controller, Sample};

/// A controller that records what it hears and answers from a script (or
/// keeps the limit when the script runs out).
#[derive(Clone)]
pub struct Scripted {
    initial: usize,
    answers: Arc<Mutex<Vec<usize>>>,
    heard: Arc<Mutex<Vec<Sample>>>,
}

impl Scripted {
    pub fn new(initial: usize, answers: &[usize]) -> Self {
        let mut answers = answers.to_vec();
        answers.reverse();
        Self {
            initial,
            answers: Arc::new(Mutex::new(answers)),
            heard: Arc::default(),
        }
    }

    pub fn heard(&self) -> Vec<Sample> {
        self.heard.lock().unwrap().clone()
    }
}

impl Controller for Scripted {
    fn initial(&self) -> usize {
        self.initial
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        self.heard.lock().unwrap().push(*sample);
        self.answers.lock().unwrap().pop().unwrap_or(sample.limit)
    }
}
