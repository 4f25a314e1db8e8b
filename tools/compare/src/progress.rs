//! A progress line on stderr while the comparison measures.

use std::io::{IsTerminal, Write};

/// Redrawn in place on a terminal, printed once per workload otherwise (so that
/// logs stay readable).
pub struct Progress {
    done: usize,
    total: usize,
    terminal: bool,
    section: &'static str,
}

impl Progress {
    pub fn new(total: usize) -> Self {
        Self {
            done: 0,
            total,
            terminal: std::io::stderr().is_terminal(),
            section: "",
        }
    }

    pub fn step(&mut self, section: &'static str, what: &str) {
        self.done += 1;
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(
                stderr,
                "\r\x1b[K[{:>3}/{}] {section}: {what}",
                self.done, self.total
            );
            let _ = stderr.flush();
        } else if section != self.section {
            let _ = writeln!(stderr, "[{:>3}/{}] {section} ...", self.done, self.total);
        }
        self.section = section;
    }

    pub fn finish(&mut self) {
        if self.terminal {
            eprint!("\r\x1b[K");
        }
        eprintln!("[{}/{}] done", self.done, self.total);
    }
}
