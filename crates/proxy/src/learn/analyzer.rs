//! The analyzer: every window, off the request path, turns the sampled
//! statistics into a rule order and publishes it (see [`super`]).

use std::sync::Arc;
use std::time::Duration;

use engine::ordering::{self, OrderPlan};
use engine::profile::Profile;
use engine::Program;
use tokio::sync::watch;

use super::stats::Entry;
use crate::metrics::OrderOutcome;
use crate::runtime::{Mode, Runtime};
use crate::Shared;

/// How often the task looks at the table while learning is off (a reload may
/// turn it on).
const IDLE_POLL: Duration = Duration::from_secs(1);

/// What the analyzer carries from one window to the next: statistics of programs
/// that have not reached `min_samples` yet.
#[derive(Debug, Default)]
pub struct State {
    generation: u64,
    pending: Vec<Entry>,
}

/// Runs until `shutdown`: sleeps a window (read from the table in force, so a
/// reload may change it), then analyses on a blocking thread.
pub async fn run(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let mut state = State::default();
    loop {
        let policy = shared.runtime.load().learning.clone();
        let wait = if policy.order {
            policy.window
        } else {
            IDLE_POLL
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        if !shared.runtime.load().learning.order {
            state = State::default();
            continue;
        }
        let sh = shared.clone();
        let mut st = std::mem::take(&mut state);
        state = tokio::task::spawn_blocking(move || {
            analyze(&sh, &mut st);
            st
        })
        .await
        .unwrap_or_default();
    }
}

/// One window: drains the statistics, plans each program of the table in force
/// that has enough of them, builds the reordered programs and publishes them in
/// one swap of the table (only if the table is still the one analysed).
pub fn analyze(shared: &Shared, state: &mut State) {
    let rt = shared.runtime.load_full();
    let policy = rt.learning.clone();
    let generation = shared.learner.generation();
    if state.generation != generation {
        *state = State {
            generation,
            pending: Vec::new(),
        };
    }
    let programs = learnable(&rt);
    // Statistics of programs no longer in the table, or of an older generation,
    // are dropped here.
    for e in shared.learner.drain() {
        if e.generation != generation || !programs.iter().any(|(p, _)| e.is_for(p)) {
            continue;
        }
        match state
            .pending
            .iter_mut()
            .find(|p| std::ptr::eq(p.program.as_ptr(), e.program.as_ptr()))
        {
            Some(p) => p.profile.merge(&e.profile),
            None => state.pending.push(e),
        }
    }
    state
        .pending
        .retain(|e| programs.iter().any(|(p, _)| e.is_for(p)));
    let mut replacements: Vec<(Arc<Program>, Arc<Program>, usize, f64)> = Vec::new();
    for (program, loaded) in &programs {
        let Some(i) = state.pending.iter().position(|e| e.is_for(program)) else {
            continue;
        };
        if state.pending[i].profile.transactions < policy.min_samples {
            shared.metrics.order_analysis(OrderOutcome::Waiting);
            continue;
        }
        let profile = state.pending.swap_remove(i).profile;
        let plan = ordering::plan(program, &profile);
        let gain = plan.expected_gain();
        if !worth_it(&plan, &profile, policy.min_gain) {
            shared.metrics.order_analysis(OrderOutcome::Unchanged);
            continue;
        }
        match build(program, loaded, &plan) {
            Ok(next) => replacements.push((program.clone(), next, plan.moved(), gain)),
            Err(e) => {
                tracing::warn!(error = %e, "rule order: cannot build the reordered program");
                shared.metrics.order_analysis(OrderOutcome::Failed);
            }
        }
    }
    if replacements.is_empty() {
        return;
    }
    let mut next = (*rt).clone();
    for route in &mut next.routes {
        let Some(p) = &route.program else { continue };
        if let Some((_, new, _, _)) = replacements.iter().find(|(old, ..)| Arc::ptr_eq(old, p)) {
            route.program = Some(new.clone());
        }
    }
    let previous = shared.runtime.compare_and_swap(&rt, Arc::new(next));
    if !Arc::ptr_eq(&*previous, &rt) {
        for _ in &replacements {
            shared.metrics.order_analysis(OrderOutcome::Superseded);
        }
        return;
    }
    for (_, _, moved, gain) in &replacements {
        shared.metrics.order_analysis(OrderOutcome::Published);
        shared.metrics.order_published(*moved, *gain);
        tracing::info!(
            moved,
            expected_gain_ns = gain,
            "rule order: published a reordered program"
        );
    }
}

/// The distinct programs of routes in mode On that can be recompiled (with their
/// parsed rules), in route order.
fn learnable(rt: &Runtime) -> Vec<(Arc<Program>, Arc<seclang::Loaded>)> {
    let mut out: Vec<(Arc<Program>, Arc<seclang::Loaded>)> = Vec::new();
    for r in rt.routes.iter().filter(|r| r.mode == Mode::On) {
        if let (Some(p), Some(l)) = (&r.program, &r.loaded) {
            if !out.iter().any(|(q, _)| Arc::ptr_eq(p, q)) {
                out.push((p.clone(), l.clone()));
            }
        }
    }
    out
}

/// Whether a plan is worth a new program: it moves rules and saves at least
/// `min_gain` of the measured rule time per request (and something at all).
pub fn worth_it(plan: &OrderPlan, profile: &Profile, min_gain: f64) -> bool {
    let gain = plan.expected_gain();
    let per_request =
        profile.phase_nanos.iter().sum::<u64>() as f64 / profile.transactions.max(1) as f64;
    plan.moved() > 0 && gain > 0.0 && gain >= per_request * min_gain
}

/// Compiles `loaded` again (with the running program's options), gives it the
/// running program's order, then applies `plan` (made on the running program).
pub fn build(
    running: &Arc<Program>,
    loaded: &seclang::Loaded,
    plan: &OrderPlan,
) -> Result<Arc<Program>, String> {
    let fresh = Program::from_loaded_with(loaded, &running.options).map_err(|e| e.to_string())?;
    let carry = ordering::like::order_like(&fresh, running).map_err(|e| e.to_string())?;
    let (fresh, _) = Program::reordered(fresh, &carry)?;
    let (next, _) = Program::reordered(fresh, plan)?;
    Ok(next)
}
