//! The `/proc` readers of `palisade bench compare`: smaps_rollup and stat parsing,
//! process trees, usage summaries, and a live reading of this test process.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use bench::compare::sampler::{
    descendants, parse_smaps_rollup, parse_stat, read_tree, summarize, Memory, Reading,
};

const ROLLUP: &str = "\
55d0c0a3f000-7ffd5b9f2000 ---p 00000000 00:00 0                          [rollup]
Rss:              141236 kB
Pss:               98765 kB
Pss_Dirty:         80000 kB
Pss_Anon:          70000 kB
Pss_File:          28765 kB
Pss_Shmem:             0 kB
Shared_Clean:      40000 kB
Shared_Dirty:          0 kB
Private_Clean:     10000 kB
Private_Dirty:     91236 kB
Referenced:       141236 kB
Anonymous:         91236 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
";

#[test]
fn smaps_rollup_gives_rss_and_pss_not_the_pss_breakdown() {
    assert_eq!(
        parse_smaps_rollup(ROLLUP),
        Some(Memory {
            rss_kb: 141_236,
            pss_kb: 98_765
        })
    );
}

#[test]
fn smaps_rollup_without_pss_is_none() {
    assert_eq!(parse_smaps_rollup("Rss: 10 kB\n"), None);
    assert_eq!(parse_smaps_rollup(""), None);
}

#[test]
fn stat_with_parentheses_and_spaces_in_the_name() {
    let text = "1234 (nginx: worker) (x)) S 1200 1234 1234 0 -1 4194624 500 0 0 0 37 12 0 0 20 0 1 0 100 1000 200";
    let s = parse_stat(text).unwrap();
    assert_eq!(s.ppid, 1200);
    assert_eq!(s.cpu_ticks, 49);
    assert_eq!(parse_stat("garbage"), None);
}

#[test]
fn descendants_follow_the_tree_only() {
    let parents = [(2, 1), (3, 2), (4, 3), (5, 1), (6, 9), (7, 6)];
    let d: Vec<u32> = descendants(2, &parents).into_iter().collect();
    assert_eq!(d, vec![2, 3, 4]);
    let d: Vec<u32> = descendants(6, &parents).into_iter().collect();
    assert_eq!(d, vec![6, 7]);
}

#[test]
fn summary_takes_maxima_means_and_cpu_over_the_interval() {
    let r = |rss, pss, ticks| Reading {
        memory: Memory {
            rss_kb: rss,
            pss_kb: pss,
        },
        cpu_ticks: ticks,
        processes: 2,
    };
    let u = summarize(&[
        (0.0, r(100, 50, 1000)),
        (1.0, r(300, 150, 1050)),
        (2.0, r(200, 100, 1100)),
    ]);
    assert_eq!(u.samples, 3);
    assert_eq!(u.processes, 2);
    assert_eq!((u.rss_kb_max, u.pss_kb_max), (300, 150));
    assert_eq!((u.rss_kb_mean, u.pss_kb_mean), (200, 100));
    // 100 ticks over 2 s at 100 ticks/s = half a core.
    assert!((u.cpu_percent - 50.0).abs() < 1e-9);
    assert_eq!(summarize(&[]).samples, 0);
}

#[test]
fn this_process_has_memory() {
    let r = read_tree(std::process::id());
    assert!(r.processes >= 1);
    assert!(r.memory.rss_kb > 0);
    assert!(r.memory.pss_kb > 0);
}
