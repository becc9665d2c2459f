//! The device plan: a host function run as a list of kernel launches, with
//! its values kept on the GPU between them.
//!
//! After `meta-fuse`, the host code of most programs is straight-line: calls
//! of `meta.fused` kernels, constants, calls of other such functions, and a
//! return. [`Plan::build`] turns that code into launches over numbered
//! values, so the executor (`super::execute`) can upload each argument when
//! its first kernel needs it, keep intermediates on the device, and start a
//! result's download as soon as its kernel ends:
//!
//! ```text
//! func.func @main(%x, %w) {                 argument 0, argument 1
//!   %0 = call @main_fused_0(%x, %w)         launch 0: (a0, a1) -> r0.0
//!   %1 = call @relu(%0)                     inlined:
//!                                             constant 0
//!                                             launch 1: (c0, r0.0) -> r1.0
//!   return %1                               results: r1.0
//! }
//! ```
//!
//! Code with anything else (control flow, guards, state, host tensor ops,
//! a kernel that was not compiled for the GPU) has no plan; the reason names
//! the op, and the runtime runs that function as a host plan with its
//! values on the GPU (`super::OnDevice`), or, when it has none either, in
//! the interpreter, one round trip per kernel call.
//!
//! The plan is pure analysis of the IR: it needs no GPU and is tested
//! without one.

use crate::host::{callee, describe};
use jitc_dialect::{ops::string_attribute, verify::op_name};
use jitc_interp::Value;
use melior::ir::{BlockLike, Module, OperationRef, RegionLike, ValueLike, operation::OperationLike};
use std::collections::HashMap;

/// A value of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Operand {
    /// The function's argument.
    Argument(usize),
    /// A constant of [`Plan::constants`].
    Constant(usize),
    /// Result `index` of launch `launch`.
    Result { launch: usize, index: usize },
}

/// One kernel launch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Launch {
    /// The kernel's name.
    pub kernel: String,
    /// Its arguments, in order.
    pub args: Vec<Operand>,
    /// How many results it has.
    pub results: usize,
}

/// A host function as launches over numbered values.
#[derive(Debug)]
pub(crate) struct Plan {
    /// How many arguments the function takes.
    pub arguments: usize,
    /// The constants, with the interpreter's values.
    pub constants: Vec<Value>,
    /// The launches, in program order.
    pub launches: Vec<Launch>,
    /// What the function returns.
    pub results: Vec<Operand>,
}

/// Calls of non-kernel functions are inlined this deep at most.
const MAX_INLINE_DEPTH: usize = 64;

/// Builds plans for the functions of one module.
struct Builder<'c, 'a> {
    functions: std::collections::BTreeMap<String, OperationRef<'c, 'a>>,
    lowered: &'a dyn Fn(&str) -> bool,
    plan: Plan,
}

impl Plan {
    /// The plan of function `name` of `module`, whose `meta.fused` kernels
    /// for which `lowered` holds run on the GPU. `Err` says, for a note,
    /// what keeps the function's host code in the interpreter.
    pub fn build(module: &Module, name: &str, lowered: &dyn Fn(&str) -> bool) -> Result<Plan, String> {
        let functions = jitc_dialect::ops::functions(module.body());
        let function = *functions
            .get(name)
            .ok_or_else(|| format!("there is no function @{name}"))?;
        let arguments = function
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .map_or(0, |b| b.argument_count());
        let mut builder = Builder {
            functions,
            lowered,
            plan: Plan {
                arguments,
                constants: Vec::new(),
                launches: Vec::new(),
                results: Vec::new(),
            },
        };
        let args = (0..arguments).map(Operand::Argument).collect();
        builder.plan.results = builder.inline(function, args, 0)?;
        Ok(builder.plan)
    }

    /// For each value that launches read, the last launch that reads it;
    /// its device buffer can go once that launch is queued.
    pub fn last_reads(&self) -> HashMap<Operand, usize> {
        let mut last = HashMap::new();
        for (i, launch) in self.launches.iter().enumerate() {
            for arg in &launch.args {
                last.insert(*arg, i);
            }
        }
        last
    }
}

impl<'c, 'a> Builder<'c, 'a> {
    /// Appends the launches of `function`'s body, called with `args`, and
    /// returns what it returns.
    fn inline(
        &mut self,
        function: OperationRef<'c, 'a>,
        args: Vec<Operand>,
        depth: usize,
    ) -> Result<Vec<Operand>, String> {
        let symbol = function
            .attribute("sym_name")
            .ok()
            .and_then(string_attribute)
            .unwrap_or("?")
            .to_owned();
        if depth > MAX_INLINE_DEPTH {
            return Err(format!("calls nest deeper than {MAX_INLINE_DEPTH} at @{symbol}"));
        }
        let body = function.region(0).map_err(|_| format!("@{symbol} has no body"))?;
        let block = body
            .first_block()
            .ok_or_else(|| format!("@{symbol} has no body"))?;
        if block.next_in_region().is_some() {
            return Err(format!("@{symbol} has more than one block"));
        }
        let mut env: HashMap<usize, Operand> = HashMap::new();
        for (i, arg) in args.iter().enumerate() {
            let value = block
                .argument(i)
                .map_err(|_| format!("@{symbol} is called with {} arguments", args.len()))?;
            env.insert(value.to_raw().ptr as usize, *arg);
        }
        let operands = |env: &HashMap<usize, Operand>, op: OperationRef| -> Result<Vec<Operand>, String> {
            (0..op.operand_count())
                .map(|i| {
                    op.operand(i)
                        .ok()
                        .and_then(|v| env.get(&(v.to_raw().ptr as usize)).copied())
                        .ok_or_else(|| format!("{} uses a value defined outside its function", describe(op)))
                })
                .collect()
        };
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let results: Vec<Operand> = match op_name(op).as_str() {
                "arith.constant" => {
                    let value = jitc_interp::constant(op).map_err(|e| e.to_string())?;
                    self.plan.constants.push(value);
                    vec![Operand::Constant(self.plan.constants.len() - 1)]
                }
                "func.call" => {
                    let name = callee(op).ok_or_else(|| format!("{} has no callee", describe(op)))?;
                    let target = *self
                        .functions
                        .get(&name)
                        .ok_or_else(|| format!("{} calls @{name}, which is not defined", describe(op)))?;
                    let args = operands(&env, op)?;
                    if target.has_attribute("meta.fused") {
                        if !(self.lowered)(&name) {
                            return Err(format!("kernel @{name} runs in the interpreter"));
                        }
                        let launch = self.plan.launches.len();
                        self.plan.launches.push(Launch {
                            kernel: name,
                            args,
                            results: op.result_count(),
                        });
                        (0..op.result_count())
                            .map(|index| Operand::Result { launch, index })
                            .collect()
                    } else {
                        self.inline(target, args, depth + 1)?
                    }
                }
                "func.return" => return operands(&env, op),
                _ => return Err(format!("{} runs on the host", describe(op))),
            };
            if results.len() != op.result_count() {
                return Err(format!("{} returns {} values", describe(op), results.len()));
            }
            for (i, result) in results.into_iter().enumerate() {
                let value = op
                    .result(i)
                    .map_err(|_| format!("{} has too few results", describe(op)))?;
                env.insert(value.to_raw().ptr as usize, result);
            }
        }
        Err(format!("@{symbol} does not end in func.return"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitc_compiler::{DiagnosticCollector, fuse, new_context, parse_module};

    /// Fuses `source` and builds the plan of `@main` with every kernel
    /// lowered; `Err` is the reason there is none.
    fn plan_of(source: &str) -> Result<Plan, String> {
        let context = new_context().unwrap();
        let _collector = DiagnosticCollector::attach(&context);
        let mut module = parse_module(&context, source).expect("the test's source parses");
        fuse(&context, &mut module).unwrap();
        Plan::build(&module, "main", &|_| true)
    }

    use jitc_test_support::example;

    #[test]
    fn mlp_is_five_launches_with_relu_inlined() {
        let plan = plan_of(&example("mlp.mlir")).unwrap();
        assert_eq!(plan.arguments, 5);
        let kernels: Vec<&str> = plan.launches.iter().map(|l| l.kernel.as_str()).collect();
        assert_eq!(
            kernels,
            [
                "main_fused_0",
                "main_fused_1",
                "relu_fused_0",
                "main_fused_2",
                "main_fused_3"
            ]
        );
        // relu's zero is a constant of the plan, read by the inlined kernel
        // along with the previous launch's result.
        assert_eq!(plan.constants.len(), 1);
        assert_eq!(
            plan.launches[2].args,
            [Operand::Constant(0), Operand::Result { launch: 1, index: 0 }]
        );
        assert_eq!(
            plan.launches[0].args,
            [Operand::Argument(0), Operand::Argument(1)]
        );
        assert_eq!(plan.results, [Operand::Result { launch: 4, index: 0 }]);
        let last = plan.last_reads();
        assert_eq!(last[&Operand::Argument(0)], 0);
        assert_eq!(last[&Operand::Result { launch: 0, index: 0 }], 1);
        assert!(!last.contains_key(&Operand::Result { launch: 4, index: 0 }));
    }

    #[test]
    fn static_examples_have_plans() {
        for name in [
            "conv.mlir",
            "instance_norm.mlir",
            "matmul.mlir",
            "sigmoid.mlir",
            "softmax.mlir",
        ] {
            let plan = plan_of(&example(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!plan.launches.is_empty(), "{name}");
            assert_eq!(plan.results.len(), 1, "{name}");
        }
    }

    #[test]
    fn control_flow_and_state_stay_in_the_interpreter() {
        let reason = plan_of(&example("rnn.mlir")).unwrap_err();
        assert_eq!(reason, "'meta.state_read' at line 7 runs on the host");
    }

    #[test]
    fn a_kernel_left_to_the_interpreter_keeps_the_function_there() {
        let context = new_context().unwrap();
        let mut module = parse_module(&context, &example("sigmoid.mlir")).unwrap();
        fuse(&context, &mut module).unwrap();
        let reason = Plan::build(&module, "main", &|_| false).unwrap_err();
        assert!(
            reason.starts_with("kernel @main_fused_0 runs in the interpreter"),
            "{reason}"
        );
        let missing = Plan::build(&module, "nope", &|_| true).unwrap_err();
        assert_eq!(missing, "there is no function @nope");
    }

    #[test]
    fn arguments_and_constants_pass_through() {
        let plan = plan_of(
            r#"func.func @main(%x: tensor<4xf32>, %n: index) -> (tensor<4xf32>, index, tensor<f32>) {
  %c = arith.constant dense<2.0> : tensor<f32>
  return %x, %n, %c : tensor<4xf32>, index, tensor<f32>
}"#,
        )
        .unwrap();
        assert!(plan.launches.is_empty());
        assert_eq!(
            plan.results,
            [Operand::Argument(0), Operand::Argument(1), Operand::Constant(0)]
        );
    }
}
