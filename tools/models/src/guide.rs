//! `--guide PATH`: the adaptive guide's tables checked against this run.
//!
//! Every family's table in the guide (`src/guide/adaptive.md`) is a summary,
//! one line a model over its disciplines and modes: runs met, the lowest
//! goodput, the most wasted calls, the highest p95, the longest settle and
//! the targets missed. The runs are deterministic (tokio's paused clock), so
//! each line must be in the guide exactly as this run prints it: a change to
//! the rule or to a model that moves a figure updates the guide in the same
//! commit, and a table can no longer fall behind unseen, as the floors alone
//! (lower bounds on the runs met) let it. The family of issue 20 and the
//! refused models also have every row in the guide's first table, checked
//! the same way.

use crate::score::Score;

/// One model's summary over its rows: the worst of their worst figures, and
/// the runs met summed.
pub struct Summary {
    name: &'static str,
    worst: Score,
    met: usize,
    runs: usize,
}

impl Summary {
    /// Folds a row (its worst score over the seeds, and its runs met) into
    /// the summaries, one per model, in the order the models come.
    pub fn add(
        summaries: &mut Vec<Summary>,
        name: &'static str,
        worst: &Score,
        met: usize,
        runs: usize,
    ) {
        match summaries.iter_mut().find(|summary| summary.name == name) {
            Some(summary) => {
                summary.worst = summary.worst.clone().worst(worst.clone());
                summary.met += met;
                summary.runs += runs;
            }
            None => summaries.push(Summary {
                name,
                worst: worst.clone(),
                met,
                runs,
            }),
        }
    }

    /// The key of the guide's line for this model: its first cell.
    pub fn key(&self) -> String {
        format!("| {} | ", self.name)
    }

    /// The line the guide's table has for this model.
    pub fn line(&self) -> String {
        let score = &self.worst;
        let settle = score.settle_text();
        let mut misses = score.misses.clone();
        misses.sort_unstable();
        format!(
            "| {} | {} / {} | {:.3} | {} | {:.2} | {settle} | {} |",
            self.name,
            self.met,
            self.runs,
            score.goodput,
            score.wasted_text(),
            score.quantiles[1],
            misses.join(", "),
        )
    }
}

/// Checks that each of `lines` is a line of the guide at `path`, and that no
/// other line of the guide has its key (its first cells) and as many cells
/// (a stale row beside the new one); prints each that fails, and says
/// whether all passed. `lines` are (key, line) pairs.
pub fn check(path: &str, lines: &[(String, String)]) -> bool {
    match std::fs::read_to_string(path) {
        Ok(guide) => check_text(&guide, lines),
        Err(error) => {
            println!("--guide {path}: {error}");
            false
        }
    }
}

fn check_text(guide: &str, lines: &[(String, String)]) -> bool {
    let cells = |line: &str| line.matches('|').count();
    let mut all = true;
    for (key, line) in lines {
        let stale: Vec<&str> = guide
            .lines()
            .filter(|other| other.starts_with(key.as_str()) && cells(other) == cells(line))
            .filter(|other| other != line)
            .collect();
        if !guide.lines().any(|other| other == line) {
            println!("not in the guide: {line}");
            all = false;
        }
        for other in stale {
            println!("in the guide, not this run's: {other}");
            all = false;
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::check_text;

    fn line(key: &str, line: &str) -> (String, String) {
        (key.to_string(), line.to_string())
    }

    const GUIDE: &str = "text\n\
        | a | 10 / 10 | 0.950 | met |\n\
        | ab | 9 / 10 | 0.800 | goodput |\n\
        | family | a | 10 / 10 | 9 / 10 |\n";

    #[test]
    fn a_line_in_the_guide_passes_and_a_prefix_of_another_model_is_not_stale() {
        assert!(check_text(
            GUIDE,
            &[line("| a | ", "| a | 10 / 10 | 0.950 | met |")]
        ));
    }

    #[test]
    fn a_figure_the_guide_does_not_have_fails() {
        assert!(!check_text(
            GUIDE,
            &[line("| a | ", "| a | 10 / 10 | 0.951 | met |")]
        ));
    }

    #[test]
    fn a_stale_line_beside_this_run_s_fails() {
        let guide = format!("{GUIDE}| a | 9 / 10 | 0.950 | goodput |\n");
        assert!(!check_text(
            &guide,
            &[line("| a | ", "| a | 10 / 10 | 0.950 | met |")]
        ));
    }
}
