//! Rendering fusion plans for `jitc explain`: readable text, and Graphviz.

use super::plan::Plan;
use std::fmt::Write;

fn domain_text(domain: &[i64]) -> String {
    if domain.is_empty() {
        return "scalar".to_owned();
    }
    domain
        .iter()
        .map(|d| if *d < 0 { "?".to_owned() } else { d.to_string() })
        .collect::<Vec<_>>()
        .join("x")
}

fn percent(before: u64, after: u64) -> String {
    if before == 0 {
        "0.0%".to_owned()
    } else {
        format!("{:.1}%", 100.0 * (before as f64 - after as f64) / before as f64)
    }
}

/// The plan as text: groups with their ops, domains and traffic, the cost
/// before and after, and every edge left unfused with the rule that kept it.
pub fn text(title: &str, plan: &Plan) -> String {
    let mut out = String::new();
    let grouped: usize = plan.groups.iter().map(Vec::len).sum();
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    let _ = writeln!(
        out,
        "{title}: {} in {}; bytes across group boundaries {} -> {} ({} less)",
        plural(grouped, "op"),
        plural(plan.groups.len(), "group"),
        plan.cost_before,
        plan.cost_after,
        percent(plan.cost_before, plan.cost_after)
    );
    for (g, members) in plan.groups.iter().enumerate() {
        let domain = domain_text(&plan.nodes[members[0]].domain);
        let (bytes_in, bytes_out) = plan.traffic[g];
        let _ = writeln!(
            out,
            "  group {g}: domain {domain}, {}, {bytes_in} bytes in, {bytes_out} bytes out",
            plural(members.len(), "op")
        );
        for &m in members {
            let _ = writeln!(out, "    {}", plan.nodes[m].label);
        }
    }
    for &(a, b, bytes) in &plan.sibling_merges {
        let _ = writeln!(
            out,
            "  sibling merge: {} with {} (they share a {bytes}-byte input)",
            plan.nodes[a].label, plan.nodes[b].label
        );
    }
    // Edges to ops that never fuse (returns, guards, calls) are not
    // decisions; the dot rendering still draws them.
    let unfused: Vec<_> = plan
        .edges
        .iter()
        .filter(|e| e.blocked.is_some_and(|b| b != super::plan::Blocked::NotFusable))
        .collect();
    if unfused.is_empty() {
        let _ = writeln!(out, "  every edge between fusable ops is fused");
    } else {
        let _ = writeln!(out, "  unfused edges:");
        for edge in unfused {
            let _ = writeln!(
                out,
                "    {} -> {} ({} bytes): {}",
                plan.nodes[edge.from].label,
                plan.nodes[edge.to].label,
                edge.bytes,
                edge.blocked.map_or("", |b| b.describe())
            );
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The plan as a Graphviz digraph: one cluster per group, fused edges
/// solid, unfused ones dashed and labelled with their rule.
pub fn dot(title: &str, plans: &[(String, Plan)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(title));
    let _ = writeln!(
        out,
        "  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];"
    );
    for (p, (name, plan)) in plans.iter().enumerate() {
        let _ = writeln!(out, "  subgraph cluster_{p} {{\n    label=\"{}\";", escape(name));
        for (g, members) in plan.groups.iter().enumerate() {
            let _ = writeln!(
                out,
                "    subgraph cluster_{p}_{g} {{\n      label=\"group {g}: domain {}\";\n      style=filled; color=lightgrey;",
                domain_text(&plan.nodes[members[0]].domain)
            );
            for &m in members {
                let _ = writeln!(
                    out,
                    "      n{p}_{m} [label=\"{}\"];",
                    escape(&plan.nodes[m].label)
                );
            }
            let _ = writeln!(out, "    }}");
        }
        for (i, node) in plan.nodes.iter().enumerate() {
            if plan.group_of[i].is_none() && plan.edges.iter().any(|e| e.from == i || e.to == i) {
                let _ = writeln!(
                    out,
                    "    n{p}_{i} [label=\"{}\", style=dashed];",
                    escape(&node.label)
                );
            }
        }
        let _ = writeln!(out, "  }}");
        for edge in &plan.edges {
            match edge.blocked {
                None => {
                    let _ = writeln!(
                        out,
                        "  n{p}_{} -> n{p}_{} [label=\"{} B\"];",
                        edge.from, edge.to, edge.bytes
                    );
                }
                Some(reason) => {
                    let _ = writeln!(
                        out,
                        "  n{p}_{} -> n{p}_{} [style=dashed, color=red, label=\"{} B\\n{}\"];",
                        edge.from,
                        edge.to,
                        edge.bytes,
                        escape(reason.describe())
                    );
                }
            }
        }
    }
    let _ = writeln!(out, "}}");
    out
}
