//! Random host code: programs whose kernels sit inside nested `scf.for`
//! and `scf.while` loops, `scf.if`s on computed values, calls, guards on
//! computed values, host index arithmetic that can divide by zero, and
//! state, for testing an executor of the host schedule against the
//! interpreter.
//!
//! Every program has the signature
//! `@main(%x: tensor<4xf32>, %n: index, %seq: tensor<?x4xf32>) ->
//! (tensor<4xf32>, index)` (`%seq` is a sequence of any length, read row
//! by row at loop indices and `%n`, past its end too), reads
//! the state `acc` (a `tensor<4xf32>`) and writes it back at the end, and
//! may call `@helper(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`.
//! Whether a run fails (a guard, `arith.divsi` by `%n = 0`, a kernel's
//! integer division by zero when `%n = 3`, a missing state) depends on
//! the inputs, so one program gives both outcomes.

use crate::Draw;
use std::fmt::Write;

const T: &str = "tensor<4xf32>";

/// Builds one function's body: SSA names, and the current tensor the
/// statements transform.
struct Body<'r, R> {
    rng: &'r mut R,
    text: String,
    next: usize,
    /// Whether `@helper` may be called (not from `@helper` itself).
    calls: bool,
    /// How many guards the program has, for their ids.
    guards: i64,
}

impl<R: Draw> Body<'_, R> {
    fn name(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    fn line(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.text, "{}{line}", "  ".repeat(indent));
    }

    /// An index constant.
    fn index(&mut self, indent: usize, value: i64) -> String {
        let name = self.name();
        self.line(indent, &format!("{name} = arith.constant {value} : index"));
        name
    }

    /// Statements that transform `current` (a `tensor<4xf32>` in scope,
    /// as are `%x` and `%n`); returns the new current value.
    fn statements(&mut self, indent: usize, mut current: String, depth: usize) -> String {
        let count = 1 + self.rng.below(3);
        for _ in 0..count {
            current = self.statement(indent, current, depth);
        }
        current
    }

    fn statement(&mut self, indent: usize, current: String, depth: usize) -> String {
        let kinds = if depth >= 3 { 4 } else { 11 };
        match self.rng.below(kinds) {
            10 if self.calls => self.integer_division(indent, current),
            0 => {
                let kind = self.rng.pick(&["add", "sub", "mul", "max", "min", "div"]);
                let name = self.name();
                let (a, b) = if self.rng.below(2) == 0 {
                    (current, "%x".to_owned())
                } else {
                    ("%x".to_owned(), current)
                };
                self.line(
                    indent,
                    &format!("{name} = \"meta.binary\"({a}, {b}) {{kind = \"{kind}\"}} : ({T}, {T}) -> {T}"),
                );
                name
            }
            1 => {
                let kind = self.rng.pick(&["tanh", "neg", "abs", "exp", "sqrt"]);
                let name = self.name();
                self.line(
                    indent,
                    &format!("{name} = \"meta.unary\"({current}) {{kind = \"{kind}\"}} : ({T}) -> {T}"),
                );
                name
            }
            2 => {
                let map =
                    self.rng
                        .pick(&["(d0) -> (3 - d0)", "(d0) -> (d0 + 1)", "(d0) -> ((d0 + 2) mod 4)"]);
                let name = self.name();
                self.line(
                    indent,
                    &format!(
                        "{name} = \"meta.reindex\"({current}) {{indices = affine_map<{map}>}} : ({T}) -> {T}"
                    ),
                );
                name
            }
            3 => {
                // Host index arithmetic: 12 / %n, which divides by zero
                // when %n is 0, then used as a map symbol.
                let twelve = self.index(indent, 12);
                let q = self.name();
                self.line(indent, &format!("{q} = arith.divsi {twelve}, %n : index"));
                let name = self.name();
                self.line(
                    indent,
                    &format!(
                        "{name} = \"meta.reindex\"({current}, {q}) {{indices = affine_map<(d0)[s0] -> ((d0 + s0) mod 4)>}} : ({T}, index) -> {T}"
                    ),
                );
                name
            }
            4 | 5 => self.for_loop(indent, current, depth),
            6 => self.branch(indent, current, depth),
            7 => self.while_loop(indent, current, depth),
            8 if self.calls => {
                // A row of the dynamic-length sequence: at `%n`, which may
                // be past its end (the overflow value then).
                let row = self.name();
                self.line(
                    indent,
                    &format!(
                        "{row} = \"meta.reindex\"(%seq, %n) {{indices = affine_map<(d0)[s0] -> (s0, d0)>, overflow_value = 0.5 : f32}} : (tensor<?x4xf32>, index) -> {T}"
                    ),
                );
                let name = self.name();
                self.line(
                    indent,
                    &format!(
                        "{name} = \"meta.binary\"({current}, {row}) {{kind = \"add\"}} : ({T}, {T}) -> {T}"
                    ),
                );
                name
            }
            8 => self.guard(indent, current),
            _ if self.calls => {
                let name = self.name();
                self.line(
                    indent,
                    &format!("{name} = func.call @helper({current}, %x) : ({T}, {T}) -> {T}"),
                );
                name
            }
            _ => self.guard(indent, current),
        }
    }

    /// An integer division in a kernel whose divisor is 0 when `%n` is 3,
    /// checked by a guard that always holds (so the division is used).
    fn integer_division(&mut self, indent: usize, current: String) -> String {
        let (numerator, table, divisor, quotient, sum, zero, ok) = (
            self.name(),
            self.name(),
            self.name(),
            self.name(),
            self.name(),
            self.name(),
            self.name(),
        );
        let i = "tensor<4xi32>";
        for line in [
            format!("{numerator} = arith.constant dense<7> : {i}"),
            format!("{table} = arith.constant dense<[1, 2, 3, 0]> : {i}"),
            format!(
                "{divisor} = \"meta.reindex\"({table}, %n) {{indices = affine_map<(d0)[s0] -> (s0)>, overflow_value = 1 : i32}} : ({i}, index) -> {i}"
            ),
            format!(
                "{quotient} = \"meta.binary\"({numerator}, {divisor}) {{kind = \"div\"}} : ({i}, {i}) -> {i}"
            ),
            format!(
                "{sum} = \"meta.reindex_reduce\"({quotient}) {{kind = \"add\", indices = affine_map<(d0) -> ()>}} : ({i}) -> tensor<i32>"
            ),
            format!("{zero} = arith.constant dense<0> : tensor<i32>"),
            format!(
                "{ok} = \"meta.binary\"({sum}, {zero}) {{kind = \"ge\"}} : (tensor<i32>, tensor<i32>) -> tensor<i1>"
            ),
        ] {
            self.line(indent, &line);
        }
        self.guards += 1;
        let id = self.guards;
        self.line(
            indent,
            &format!(
                "\"meta.guard\"({ok}) {{id = {id} : i64, reason = \"quotients >= 0\"}} : (tensor<i1>) -> ()"
            ),
        );
        current
    }

    /// A sum of `current` to a `tensor<f32>` and its value as an `f32`.
    fn sum(&mut self, indent: usize, current: &str) -> String {
        let sum = self.name();
        self.line(
            indent,
            &format!(
                "{sum} = \"meta.reindex_reduce\"({current}) {{kind = \"add\", indices = affine_map<(d0) -> ()>}} : ({T}) -> tensor<f32>"
            ),
        );
        let scalar = self.name();
        self.line(
            indent,
            &format!("{scalar} = tensor.extract {sum}[] : tensor<f32>"),
        );
        scalar
    }

    fn for_loop(&mut self, indent: usize, current: String, depth: usize) -> String {
        let lower = self.index(indent, 0);
        let upper = match self.rng.below(3) {
            0 => "%n".to_owned(),
            _ => {
                let trips = self.rng.below(4) as i64;
                self.index(indent, trips)
            }
        };
        let step = self.index(indent, 1);
        let (result, iv, carried) = (self.name(), self.name(), self.name());
        self.line(
            indent,
            &format!(
                "{result} = scf.for {iv} = {lower} to {upper} step {step} iter_args({carried} = {current}) -> ({T}) {{"
            ),
        );
        // The induction variable as a map symbol.
        let shifted = self.name();
        self.line(
            indent + 1,
            &format!(
                "{shifted} = \"meta.reindex\"({carried}, {iv}) {{indices = affine_map<(d0)[s0] -> ((d0 + s0) mod 4)>}} : ({T}, index) -> {T}"
            ),
        );
        let mut end = self.statements(indent + 1, shifted, depth + 1);
        if self.calls && self.rng.below(2) == 0 {
            // The sequence's row at the induction variable.
            let row = self.name();
            self.line(
                indent + 1,
                &format!(
                    "{row} = \"meta.reindex\"(%seq, {iv}) {{indices = affine_map<(d0)[s0] -> (s0, d0)>}} : (tensor<?x4xf32>, index) -> {T}"
                ),
            );
            let name = self.name();
            self.line(
                indent + 1,
                &format!("{name} = \"meta.binary\"({end}, {row}) {{kind = \"mul\"}} : ({T}, {T}) -> {T}"),
            );
            end = name;
        }
        self.line(indent + 1, &format!("scf.yield {end} : {T}"));
        self.line(indent, "}");
        result
    }

    fn while_loop(&mut self, indent: usize, current: String, depth: usize) -> String {
        let zero = self.index(indent, 0);
        let one = self.index(indent, 1);
        let (result, k, carried) = (self.name(), self.name(), self.name());
        self.line(
            indent,
            &format!(
                "{result}:2 = scf.while ({k} = {zero}, {carried} = {current}) : (index, {T}) -> (index, {T}) {{"
            ),
        );
        let go = self.name();
        self.line(indent + 1, &format!("{go} = arith.cmpi slt, {k}, %n : index"));
        self.line(
            indent + 1,
            &format!("scf.condition({go}) {k}, {carried} : index, {T}"),
        );
        let (k2, a2) = (self.name(), self.name());
        self.line(indent, "} do {");
        self.line(indent, &format!("^bb0({k2}: index, {a2}: {T}):"));
        let end = self.statements(indent + 1, a2, depth + 1);
        let k3 = self.name();
        self.line(indent + 1, &format!("{k3} = arith.addi {k2}, {one} : index"));
        self.line(indent + 1, &format!("scf.yield {k3}, {end} : index, {T}"));
        self.line(indent, "}");
        format!("{result}#1")
    }

    fn branch(&mut self, indent: usize, current: String, depth: usize) -> String {
        let scalar = self.sum(indent, &current);
        let zero = self.name();
        self.line(indent, &format!("{zero} = arith.constant 0.0 : f32"));
        let condition = self.name();
        let predicate = self.rng.pick(&["ogt", "olt", "uge"]);
        self.line(
            indent,
            &format!("{condition} = arith.cmpf {predicate}, {scalar}, {zero} : f32"),
        );
        let result = self.name();
        self.line(indent, &format!("{result} = scf.if {condition} -> ({T}) {{"));
        let then = self.statements(indent + 1, current.clone(), depth + 1);
        self.line(indent + 1, &format!("scf.yield {then} : {T}"));
        self.line(indent, "} else {");
        let otherwise = self.statements(indent + 1, current, depth + 1);
        self.line(indent + 1, &format!("scf.yield {otherwise} : {T}"));
        self.line(indent, "}");
        result
    }

    /// A guard that the largest element of `current` is below a limit;
    /// it fails on some inputs.
    fn guard(&mut self, indent: usize, current: String) -> String {
        let max = self.name();
        self.line(
            indent,
            &format!(
                "{max} = \"meta.reindex_reduce\"({current}) {{kind = \"max\", indices = affine_map<(d0) -> ()>}} : ({T}) -> tensor<f32>"
            ),
        );
        let limit = self.rng.pick(&["1.5", "3.0", "50.0"]);
        let bound = self.name();
        self.line(
            indent,
            &format!("{bound} = arith.constant dense<{limit}> : tensor<f32>"),
        );
        let ok = self.name();
        self.line(
            indent,
            &format!(
                "{ok} = \"meta.binary\"({max}, {bound}) {{kind = \"lt\"}} : (tensor<f32>, tensor<f32>) -> tensor<i1>"
            ),
        );
        self.guards += 1;
        let id = self.guards;
        self.line(
            indent,
            &format!(
                "\"meta.guard\"({ok}) {{id = {id} : i64, reason = \"max < {limit}\"}} : (tensor<i1>) -> ()"
            ),
        );
        current
    }
}

/// A random program of host code around kernels (see the module docs).
pub fn random_host_program(rng: &mut impl Draw) -> String {
    let mut main = Body {
        rng,
        text: String::new(),
        next: 0,
        calls: true,
        guards: 0,
    };
    main.line(
        0,
        &format!("func.func @main(%x: {T}, %n: index, %seq: tensor<?x4xf32>) -> ({T}, index) {{"),
    );
    main.line(
        1,
        &format!("%state = \"meta.state_read\"() {{name = \"acc\"}} : () -> {T}"),
    );
    let start = main.name();
    main.line(
        1,
        &format!("{start} = \"meta.binary\"(%state, %x) {{kind = \"add\"}} : ({T}, {T}) -> {T}"),
    );
    let end = main.statements(1, start, 0);
    main.line(
        1,
        &format!("\"meta.state_write\"({end}) {{name = \"acc\"}} : ({T}) -> ()"),
    );
    main.line(1, &format!("return {end}, %n : {T}, index"));
    main.line(0, "}");
    let Body {
        rng,
        text: mut out,
        guards,
        ..
    } = main;
    let mut helper = Body {
        rng,
        text: String::new(),
        next: 0,
        calls: false,
        guards,
    };
    helper.line(0, &format!("func.func @helper(%a: {T}, %x: {T}) -> {T} {{"));
    // `%n` is not in scope in the helper: its index arithmetic uses 1.
    helper.line(1, "%n = arith.constant 1 : index");
    let end = helper.statements(1, "%a".to_owned(), 1);
    helper.line(1, &format!("return {end} : {T}"));
    helper.line(0, "}");
    out.push_str(&helper.text);
    out
}
