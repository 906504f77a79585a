//! The order of a segment's units that minimises the expected cost of evaluating
//! it, under precedence constraints.
//!
//! Unit `i` costs `c_i` (ns per evaluation) and, once evaluated, ends the phase
//! with probability `p_i` (independently, as the RuleCache paper's naive-Bayes
//! model assumes). The expected cost of an order is
//! `E = sum_i c_i * prod_{j before i} (1 - p_j)`. For sequences `S`, `T` with
//! `C(S)` their expected cost and `Q(S) = prod (1 - p)`, `C(ST) = C(S) + Q(S) C(T)`,
//! so `S` goes before `T` exactly when `C(S) / (1 - Q(S)) <= C(T) / (1 - Q(T))`:
//! a ratio rule (Smith's rule for single units, `c / p`). This objective is
//! series-parallel optimisable, so:
//! - without constraints, sorting by `c / p` is optimal;
//! - when the constraints form disjoint chains, Sidney's decomposition (each chain
//!   cut into prefixes of least ratio, the pieces merged by ratio) is optimal;
//! - otherwise a greedy order (least ratio among the units whose predecessors are
//!   placed) is improved by adjacent swaps that respect the constraints.

/// One unit's statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    /// Cost of one evaluation (ns).
    pub cost: f64,
    /// Probability that evaluating it ends the phase.
    pub exit: f64,
}

/// The expected cost of evaluating `jobs` in `order`.
pub fn expected_cost(jobs: &[Job], order: &[usize]) -> f64 {
    let mut reach = 1.0;
    let mut total = 0.0;
    for &i in order {
        let j = jobs[i];
        total += reach * j.cost;
        reach *= 1.0 - j.exit.clamp(0.0, 1.0);
    }
    total
}

/// The ratio of a sequence: `C / (1 - Q)` (infinite when nothing can exit).
fn ratio(jobs: &[Job], seq: &[usize]) -> f64 {
    let mut reach = 1.0;
    let mut c = 0.0;
    for &i in seq {
        c += reach * jobs[i].cost;
        reach *= 1.0 - jobs[i].exit.clamp(0.0, 1.0);
    }
    let p = 1.0 - reach;
    if p <= 0.0 {
        f64::INFINITY
    } else {
        c / p
    }
}

/// The best order found for `jobs` where `preds[i]` lists units that must come
/// before `i`. Ties keep the original order; the result is never worse than the
/// identity order.
pub fn best_order(jobs: &[Job], preds: &[Vec<usize>]) -> Vec<usize> {
    let n = jobs.len();
    let identity: Vec<usize> = (0..n).collect();
    if n < 2 {
        return identity;
    }
    let candidate = if preds.iter().all(Vec::is_empty) {
        smith(jobs, &identity)
    } else if let Some(chains) = as_chains(n, preds) {
        sidney_chains(jobs, &chains)
    } else {
        local_search(jobs, preds, greedy(jobs, preds))
    };
    if expected_cost(jobs, &candidate) < expected_cost(jobs, &identity) {
        candidate
    } else {
        identity
    }
}

/// Smith's rule: units sorted by `c / p`, stable.
fn smith(jobs: &[Job], units: &[usize]) -> Vec<usize> {
    let mut v = units.to_vec();
    v.sort_by(|&a, &b| ratio(jobs, &[a]).total_cmp(&ratio(jobs, &[b])));
    v
}

/// The transitive closure of the constraints: `before[i][j]` when `j` must precede `i`.
fn closure(n: usize, preds: &[Vec<usize>]) -> Vec<Vec<bool>> {
    let mut before = vec![vec![false; n]; n];
    // Predecessors come earlier in the original order, so one pass in that order.
    for i in 0..n {
        for &p in preds.get(i).map(Vec::as_slice).unwrap_or(&[]) {
            if p < n && p != i {
                before[i][p] = true;
                let row = before[p].clone();
                for (k, b) in row.into_iter().enumerate() {
                    if b {
                        before[i][k] = true;
                    }
                }
            }
        }
    }
    before
}

/// The constraints as disjoint chains (each unit with at most one immediate
/// predecessor and one immediate successor), when they are.
fn as_chains(n: usize, preds: &[Vec<usize>]) -> Option<Vec<Vec<usize>>> {
    let before = closure(n, preds);
    let mut next: Vec<Option<usize>> = vec![None; n];
    let mut has_pred = vec![false; n];
    for i in 0..n {
        let all: Vec<usize> = (0..n).filter(|&j| before[i][j]).collect();
        // Immediate predecessors: those no other predecessor comes after.
        let immediate: Vec<usize> = all
            .iter()
            .copied()
            .filter(|&j| !all.iter().any(|&k| k != j && before[k][j]))
            .collect();
        match immediate.as_slice() {
            [] => {}
            [p] => {
                if next[*p].is_some() {
                    return None;
                }
                next[*p] = Some(i);
                has_pred[i] = true;
            }
            _ => return None,
        }
    }
    let mut chains = Vec::new();
    for start in (0..n).filter(|&i| !has_pred[i]) {
        let mut chain = vec![start];
        let mut cur = start;
        while let Some(nx) = next[cur] {
            chain.push(nx);
            cur = nx;
        }
        chains.push(chain);
    }
    Some(chains)
}

/// Sidney's decomposition for disjoint chains: each chain is cut into modules
/// (repeatedly its prefix of least ratio), and modules are merged by ratio.
fn sidney_chains(jobs: &[Job], chains: &[Vec<usize>]) -> Vec<usize> {
    let mut modules: Vec<(f64, usize, Vec<usize>)> = Vec::new();
    for chain in chains {
        let mut rest: &[usize] = chain;
        while !rest.is_empty() {
            let mut best = 1;
            let mut best_r = ratio(jobs, &rest[..1]);
            for k in 2..=rest.len() {
                let r = ratio(jobs, &rest[..k]);
                if r < best_r {
                    best_r = r;
                    best = k;
                }
            }
            modules.push((best_r, rest[0], rest[..best].to_vec()));
            rest = &rest[best..];
        }
    }
    // Stable by ratio, then by original position of the module's first unit (a
    // chain's modules have non-decreasing ratios, so chain order is kept).
    modules.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    modules.into_iter().flat_map(|m| m.2).collect()
}

/// Least ratio first among the units whose predecessors are placed.
fn greedy(jobs: &[Job], preds: &[Vec<usize>]) -> Vec<usize> {
    let n = jobs.len();
    let mut placed = vec![false; n];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let next = (0..n)
            .filter(|&i| !placed[i] && preds[i].iter().all(|&p| p >= n || placed[p]))
            .min_by(|&a, &b| {
                ratio(jobs, &[a])
                    .total_cmp(&ratio(jobs, &[b]))
                    .then(a.cmp(&b))
            });
        // Predecessors are earlier units, so some unit is always available.
        let Some(i) = next else { break };
        placed[i] = true;
        out.push(i);
    }
    out
}

/// Adjacent swaps allowed by the constraints, kept while they lower the expected
/// cost (bounded number of passes).
fn local_search(jobs: &[Job], preds: &[Vec<usize>], mut order: Vec<usize>) -> Vec<usize> {
    let n = order.len();
    let before = closure(n, preds);
    for _ in 0..n.max(1) * 4 {
        let mut improved = false;
        for k in 0..n.saturating_sub(1) {
            let (a, b) = (order[k], order[k + 1]);
            if before[b][a] {
                continue;
            }
            // Only the pair's contribution changes.
            let cost_ab = jobs[a].cost + (1.0 - jobs[a].exit) * jobs[b].cost;
            let cost_ba = jobs[b].cost + (1.0 - jobs[b].exit) * jobs[a].cost;
            if cost_ba + 1e-12 < cost_ab {
                order.swap(k, k + 1);
                improved = true;
            }
        }
        if !improved {
            break;
        }
    }
    order
}

/// Whether `order` is a permutation of `0..n` respecting `preds`.
pub fn respects(order: &[usize], preds: &[Vec<usize>]) -> bool {
    let n = preds.len();
    let mut pos = vec![usize::MAX; n];
    for (k, &i) in order.iter().enumerate() {
        if i >= n || pos[i] != usize::MAX {
            return false;
        }
        pos[i] = k;
    }
    order.len() == n && (0..n).all(|i| preds[i].iter().all(|&p| p < n && pos[p] < pos[i]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn job(cost: f64, exit: f64) -> Job {
        Job { cost, exit }
    }

    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for k in 0..=p.len() {
                let mut q = p.clone();
                q.insert(k, n - 1);
                out.push(q);
            }
        }
        out
    }

    fn brute(jobs: &[Job], preds: &[Vec<usize>]) -> f64 {
        permutations(jobs.len())
            .into_iter()
            .filter(|o| respects(o, preds))
            .map(|o| expected_cost(jobs, &o))
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn expected_cost_of_hand_made_cases() {
        let jobs = [job(10.0, 0.5), job(4.0, 0.0), job(2.0, 1.0)];
        // 10 + 0.5*4 + 0.5*2
        assert!((expected_cost(&jobs, &[0, 1, 2]) - 13.0).abs() < 1e-9);
        // 2, then nothing runs.
        assert!((expected_cost(&jobs, &[2, 0, 1]) - 2.0).abs() < 1e-9);
        assert!((expected_cost(&jobs, &[1, 0, 2]) - 15.0).abs() < 1e-9);
        assert_eq!(expected_cost(&jobs, &[]), 0.0);
    }

    #[test]
    fn smith_rule_puts_cheap_likely_exits_first() {
        let jobs = [job(100.0, 0.01), job(5.0, 0.5), job(1.0, 0.0)];
        let order = best_order(&jobs, &[vec![], vec![], vec![]]);
        assert_eq!(order, vec![1, 0, 2]);
    }

    #[test]
    fn nothing_moves_when_nothing_exits() {
        let jobs = [job(100.0, 0.0), job(5.0, 0.0), job(1.0, 0.0)];
        assert_eq!(best_order(&jobs, &[vec![], vec![], vec![]]), vec![0, 1, 2]);
    }

    #[test]
    fn a_chain_constraint_is_kept_and_optimal() {
        // 2 must follow 0; 2 is the best exit, so 0 is pulled forward with it.
        let jobs = [job(1.0, 0.0), job(50.0, 0.1), job(1.0, 0.9)];
        let preds = vec![vec![], vec![], vec![0]];
        let order = best_order(&jobs, &preds);
        assert!(respects(&order, &preds));
        assert_eq!(order, vec![0, 2, 1]);
    }

    fn jobs_strategy(max: usize) -> impl Strategy<Value = Vec<Job>> {
        prop::collection::vec((0.0f64..100.0, 0.0f64..1.0), 1..=max)
            .prop_map(|v| v.into_iter().map(|(c, p)| job(c, p)).collect())
    }

    proptest! {
        #[test]
        fn unconstrained_orders_are_optimal(jobs in jobs_strategy(6)) {
            let preds = vec![vec![]; jobs.len()];
            let order = best_order(&jobs, &preds);
            prop_assert!(respects(&order, &preds));
            let best = brute(&jobs, &preds);
            prop_assert!(expected_cost(&jobs, &order) <= best + 1e-6 * (1.0 + best));
        }

        #[test]
        fn chain_constrained_orders_are_optimal(
            jobs in jobs_strategy(6),
            cuts in prop::collection::vec(any::<bool>(), 6),
        ) {
            // Units split into chains by `cuts`: consecutive units, alternately
            // assigned to two interleaved chains.
            let n = jobs.len();
            let mut preds = vec![vec![]; n];
            let mut last: [Option<usize>; 2] = [None, None];
            for i in 0..n {
                let c = usize::from(cuts[i]);
                if let Some(p) = last[c] { preds[i].push(p); }
                last[c] = Some(i);
            }
            let order = best_order(&jobs, &preds);
            prop_assert!(respects(&order, &preds));
            let best = brute(&jobs, &preds);
            prop_assert!(expected_cost(&jobs, &order) <= best + 1e-6 * (1.0 + best));
        }

        #[test]
        fn general_constraints_are_never_violated(
            jobs in jobs_strategy(9),
            edges in prop::collection::vec((0usize..9, 0usize..9), 0..20),
        ) {
            let n = jobs.len();
            let mut preds = vec![vec![]; n];
            for (a, b) in edges {
                let (a, b) = (a % n, b % n);
                if a < b && !preds[b].contains(&a) { preds[b].push(a); }
            }
            let order = best_order(&jobs, &preds);
            prop_assert!(respects(&order, &preds));
            let identity: Vec<usize> = (0..n).collect();
            prop_assert!(expected_cost(&jobs, &order) <= expected_cost(&jobs, &identity) + 1e-9);
        }
    }
}
