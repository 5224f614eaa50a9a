//! adprof-native-probe: chains built on upstream computegraph keys, the way tenferro-rs 0.8.0 builds,
//! differentiates and rebuilds them, printing adprof's `--cmd` JSON protocol on stdout.
//!
//! Usage: `adprof-native-probe KIND DEPTH [--mode traced|eager] [--calls K] [--x X] [--seconds-only]`
//!
//! `--seconds-only`: print only the protocol's times (`transform_seconds`, `drop_seconds`; eager:
//! `forward_seconds`, `backward_seconds`), as a user's own program would: no counters decide then.
//!
//! Kinds (the chain shape, and whether keys are interned):
//! - `mul`: y <- y*y*0.5. The op `y*y` has two input slots on the same child key, so comparing two
//!   separately built copies of a depth-d key walks 2^d nodes: x2 per layer.
//! - `svd3`: y <- recombine(svd(y)): a three-output op whose U, S, Vt all feed the next op: x3 per layer.
//! - `sin`: y <- sin(y), single use (no fan-in); eager by default: every backward call re-derives the
//!   source program and rebuilds + registers the derivative trace: O(depth^2) per call.
//! - `fixed`, `fixed-svd3`, `fixed-sin`: the same chains with hash-consed (interned) keys: the rebuilt
//!   trace reuses the primal `Arc`s, so every table lookup stops at `Arc::ptr_eq`: linear.
//!
//! What happens (after tenferro's `grad` / `derivative_traces_from_frozen_program`):
//! 1. forward: record the chain with a `GraphBuilder`; register each value's metadata in a global table
//!    keyed by `ValueKey` (tenferro's GLOBAL_METADATA), held by a scope.
//! 2. transform: compile the source graph to SSA, build the derivative SSA (forward replay + reverse
//!    sweep), rebuild it as a graph with a fresh `GraphBuilder` (every op a new `Arc<OperationKey>`),
//!    register every value of it. The replayed forward keys equal the live primal keys structurally but
//!    share no pointers, so each `HashMap::entry` runs upstream's recursive `ValueKey::eq`.
//! 3. drop: drop the derivative trace; its scope releases each registration with `get_mut`: the same
//!    comparisons again.
//!
//! Each measured phase is its own `#[inline(never)]` function (`phase_forward`, `phase_transform`,
//! `phase_drop`, `phase_backward`) so that `valgrind --tool=callgrind --toggle-collect='*phase_transform*'`
//! counts only that phase.
//!
//! Counters (deterministic; counted in this crate only, upstream is unmodified):
//! - `key_comparisons`: calls of this crate's `Op::eq`. Upstream's `OperationKey::eq` compares the
//!   operation right after the fingerprint, so this is the number of structural `OperationKey`
//!   comparisons (nodes walked by `ValueKey::eq`) plus the interner's lookups.
//! - `input_key_comparisons`: calls of `InputId::eq` (the leaves of those walks).
//! - `metadata_lookups`: table `entry` / `get_mut` / `remove` calls.
//! - `nodes_visited`: ops visited by this crate's graph walks (compile, transform, rebuild, fingerprint).
//!
//! Under `ADPROF_METRIC=instructions` (set by adprof when it counts instructions) the probe prints zero
//! for every time, so that its whole output, and hence its instruction count, is the same on every run.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use computegraph::graph::{Graph, GraphBuilder};
use computegraph::{GraphOperation, OperationRole, ValueKey, ValueRef};

/// std's `DefaultHasher` with its fixed keys: no per-process random seed, so every run hashes, probes
/// and compares exactly the same way (identical instruction counts).
type Deterministic = BuildHasherDefault<DefaultHasher>;

static KEY_COMPARISONS: AtomicU64 = AtomicU64::new(0);
static INPUT_KEY_COMPARISONS: AtomicU64 = AtomicU64::new(0);
static METADATA_LOOKUPS: AtomicU64 = AtomicU64::new(0);
static NODES_VISITED: AtomicU64 = AtomicU64::new(0);

// ---------------------------------------------------------------------------------------------------
// The operation vocabulary (scalars: the cost under study is in the keys, not in the arithmetic)

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum OpKind {
    Mul,
    Scale,
    Sin,
    Cos,
    Add,
    /// 1x1 "SVD": (U, S, Vt) = (sign a, |a|, 1).
    Svd,
    /// U * S * Vt.
    Recombine,
}

#[derive(Clone, Debug, Hash)]
struct Op {
    kind: OpKind,
    /// `f64::to_bits` of the constant of `Scale` (0 otherwise).
    constant_bits: u64,
}

impl Op {
    fn new(kind: OpKind) -> Self {
        Op {
            kind,
            constant_bits: 0,
        }
    }
    fn scale(c: f64) -> Self {
        Op {
            kind: OpKind::Scale,
            constant_bits: c.to_bits(),
        }
    }
    fn constant(&self) -> f64 {
        f64::from_bits(self.constant_bits)
    }
}

impl PartialEq for Op {
    fn eq(&self, other: &Self) -> bool {
        KEY_COMPARISONS.fetch_add(1, Relaxed);
        self.kind == other.kind && self.constant_bits == other.constant_bits
    }
}

impl Eq for Op {}

#[derive(Clone, Debug, Hash)]
struct InputId(u32);

impl PartialEq for InputId {
    fn eq(&self, other: &Self) -> bool {
        INPUT_KEY_COMPARISONS.fetch_add(1, Relaxed);
        self.0 == other.0
    }
}

impl Eq for InputId {}

impl GraphOperation for Op {
    type Operand = f64;
    type Context = ();
    type InputKey = InputId;

    fn input_count(&self) -> usize {
        match self.kind {
            OpKind::Mul | OpKind::Add => 2,
            OpKind::Recombine => 3,
            _ => 1,
        }
    }

    fn output_count(&self) -> usize {
        match self.kind {
            OpKind::Svd => 3,
            _ => 1,
        }
    }
}

fn eval_op(op: &Op, a: &[f64]) -> Vec<f64> {
    match op.kind {
        OpKind::Mul => vec![a[0] * a[1]],
        OpKind::Scale => vec![op.constant() * a[0]],
        OpKind::Sin => vec![a[0].sin()],
        OpKind::Cos => vec![a[0].cos()],
        OpKind::Add => vec![a[0] + a[1]],
        OpKind::Svd => vec![if a[0] < 0.0 { -1.0 } else { 1.0 }, a[0].abs(), 1.0],
        OpKind::Recombine => vec![a[0] * a[1] * a[2]],
    }
}

// ---------------------------------------------------------------------------------------------------
// SSA programs (tenferro's FrozenProgram, reduced): slots 0..n_inputs are inputs

struct Instr {
    op: Op,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
}

#[derive(Default)]
struct Program {
    n_inputs: usize,
    n_slots: usize,
    instrs: Vec<Instr>,
    outputs: Vec<usize>,
    /// Derivative programs: the first `n_replay` instructions replay the source program.
    n_replay: usize,
}

impl Program {
    fn with_inputs(n: usize) -> Self {
        Program {
            n_inputs: n,
            n_slots: n,
            ..Default::default()
        }
    }

    fn push(&mut self, op: Op, inputs: Vec<usize>) -> Vec<usize> {
        let outputs: Vec<usize> = (self.n_slots..self.n_slots + op.output_count()).collect();
        self.n_slots += outputs.len();
        self.instrs.push(Instr {
            op,
            inputs,
            outputs: outputs.clone(),
        });
        outputs
    }

    fn push1(&mut self, op: Op, inputs: Vec<usize>) -> usize {
        self.push(op, inputs)[0]
    }

    fn run(&self, inputs: &[f64]) -> Vec<f64> {
        let mut slots = vec![0.0; self.n_slots];
        slots[..inputs.len()].copy_from_slice(inputs);
        for instr in &self.instrs {
            let args: Vec<f64> = instr.inputs.iter().map(|&s| slots[s]).collect();
            for (&o, v) in instr.outputs.iter().zip(eval_op(&instr.op, &args)) {
                slots[o] = v;
            }
        }
        self.outputs.iter().map(|&o| slots[o]).collect()
    }
}

/// The source program of a recorded graph (values and ops are already in topological order).
fn compile_source(graph: &Graph<Op>) -> Program {
    let mut prog = Program::with_inputs(graph.inputs().len());
    for node in graph.operations() {
        NODES_VISITED.fetch_add(1, Relaxed);
        let inputs = node
            .inputs
            .iter()
            .map(|r| match r {
                ValueRef::Local(id) => *id,
                ValueRef::External(_) => panic!("the probe records one graph per chain"),
            })
            .collect();
        let outs = prog.push(node.operation.clone(), inputs);
        debug_assert_eq!(outs, node.outputs);
    }
    prog.outputs = graph.outputs().to_vec();
    prog
}

/// tenferro's semantic fingerprint: an O(N) positional encoding of the program.
fn fingerprint_program(prog: &Program) -> u64 {
    let mut h = DefaultHasher::new();
    for instr in &prog.instrs {
        NODES_VISITED.fetch_add(1, Relaxed);
        instr.op.kind.hash(&mut h);
        instr.op.constant_bits.hash(&mut h);
        instr.inputs.hash(&mut h);
    }
    prog.outputs.hash(&mut h);
    h.finish()
}

/// Whole-program VJP: derivative inputs are (source inputs..., seed); outputs (primal output, d/dx0).
fn transform(src: &Program) -> Program {
    let mut der = Program::with_inputs(src.n_inputs + 1);
    let seed = src.n_inputs;
    // forward replay: source slot -> derivative slot
    let mut map: Vec<usize> = vec![usize::MAX; src.n_slots];
    for (i, m) in map.iter_mut().enumerate().take(src.n_inputs) {
        *m = i;
    }
    for instr in &src.instrs {
        NODES_VISITED.fetch_add(1, Relaxed);
        let outs = der.push(
            instr.op.clone(),
            instr.inputs.iter().map(|&s| map[s]).collect(),
        );
        for (&o, d) in instr.outputs.iter().zip(outs) {
            map[o] = d;
        }
    }
    der.n_replay = der.instrs.len();
    // reverse sweep, cotangents accumulated with Add
    let mut ct: Vec<Option<usize>> = vec![None; src.n_slots];
    ct[src.outputs[0]] = Some(seed);
    for instr in src.instrs.iter().rev() {
        NODES_VISITED.fetch_add(1, Relaxed);
        let g: Vec<Option<usize>> = instr.outputs.iter().map(|&o| ct[o]).collect();
        if g.iter().all(Option::is_none) {
            continue;
        }
        let a: Vec<usize> = instr.inputs.iter().map(|&s| map[s]).collect();
        let contribs: Vec<(usize, usize)> = match instr.op.kind {
            OpKind::Mul => {
                let g0 = g[0].unwrap();
                vec![
                    (
                        instr.inputs[0],
                        der.push1(Op::new(OpKind::Mul), vec![g0, a[1]]),
                    ),
                    (
                        instr.inputs[1],
                        der.push1(Op::new(OpKind::Mul), vec![g0, a[0]]),
                    ),
                ]
            }
            OpKind::Scale => vec![(
                instr.inputs[0],
                der.push1(instr.op.clone(), vec![g[0].unwrap()]),
            )],
            OpKind::Sin => {
                let c = der.push1(Op::new(OpKind::Cos), vec![a[0]]);
                vec![(
                    instr.inputs[0],
                    der.push1(Op::new(OpKind::Mul), vec![g[0].unwrap(), c]),
                )]
            }
            OpKind::Add => vec![
                (instr.inputs[0], g[0].unwrap()),
                (instr.inputs[1], g[0].unwrap()),
            ],
            OpKind::Svd => match g[1] {
                // d|a|/da = sign a = U; U and Vt are locally constant
                Some(gs) => {
                    let u = map[instr.outputs[0]];
                    vec![(
                        instr.inputs[0],
                        der.push1(Op::new(OpKind::Mul), vec![gs, u]),
                    )]
                }
                None => vec![],
            },
            OpKind::Recombine => {
                let g0 = g[0].unwrap();
                let (u, s, vt) = (a[0], a[1], a[2]);
                let gvt = der.push1(Op::new(OpKind::Mul), vec![g0, vt]);
                let gu_ = der.push1(Op::new(OpKind::Mul), vec![g0, u]);
                vec![
                    (
                        instr.inputs[0],
                        der.push1(Op::new(OpKind::Mul), vec![gvt, s]),
                    ),
                    (
                        instr.inputs[1],
                        der.push1(Op::new(OpKind::Mul), vec![gvt, u]),
                    ),
                    (
                        instr.inputs[2],
                        der.push1(Op::new(OpKind::Mul), vec![gu_, s]),
                    ),
                ]
            }
            OpKind::Cos => panic!("cos appears in derivative programs only"),
        };
        for (slot, c) in contribs {
            ct[slot] = Some(match ct[slot] {
                Some(prev) => der.push1(Op::new(OpKind::Add), vec![prev, c]),
                None => c,
            });
        }
    }
    let gx = match ct[0] {
        Some(g) => g,
        None => der.push1(Op::scale(0.0), vec![0]),
    };
    der.outputs = vec![map[src.outputs[0]], gx];
    der
}

// ---------------------------------------------------------------------------------------------------
// The global metadata table (tenferro's GLOBAL_METADATA) and its scopes

#[derive(Clone, Debug)]
#[allow(dead_code)] // held like tenferro's metadata; only its registration cost matters here
struct Meta {
    shape: Vec<usize>,
    dtype: &'static str,
}

struct Entry {
    stack: Vec<(u64, Meta)>,
}

struct Table {
    map: HashMap<ValueKey<Op>, Entry, Deterministic>,
    next_token: u64,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(Table {
            map: HashMap::default(),
            next_token: 0,
        })
    })
}

/// A batch of registrations, released on drop (tenferro's `GlobalMetadataScope`).
struct Scope {
    registrations: Vec<(ValueKey<Op>, u64)>,
}

fn register<'a>(keys: impl Iterator<Item = &'a ValueKey<Op>>) -> Scope {
    let mut guard = table().lock().unwrap();
    let table = &mut *guard;
    let mut registrations = Vec::new();
    for key in keys {
        let token = table.next_token;
        table.next_token += 1;
        METADATA_LOOKUPS.fetch_add(1, Relaxed);
        let meta = Meta {
            shape: Vec::new(),
            dtype: "f64",
        };
        table
            .map
            .entry(key.clone())
            .or_insert_with(|| Entry { stack: Vec::new() })
            .stack
            .push((token, meta));
        registrations.push((key.clone(), token));
    }
    Scope { registrations }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let mut guard = table().lock().unwrap();
        for (key, token) in self.registrations.drain(..) {
            METADATA_LOOKUPS.fetch_add(1, Relaxed);
            let empty = match guard.map.get_mut(&key) {
                Some(entry) => {
                    entry.stack.retain(|(t, _)| *t != token);
                    entry.stack.is_empty()
                }
                None => false,
            };
            if empty {
                METADATA_LOOKUPS.fetch_add(1, Relaxed);
                guard.map.remove(&key);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Hash-consing for the `fixed` kinds: one canonical key per (operation, canonical input ids)

#[derive(Default)]
struct Interner {
    ops: HashMap<(Op, Vec<u32>), u32, Deterministic>,
    /// canonical id -> key (an op's outputs get consecutive ids)
    keys: Vec<ValueKey<Op>>,
    inputs: HashMap<u32, u32, Deterministic>,
}

impl Interner {
    fn input(&mut self, key: &ValueKey<Op>, raw: u32) -> u32 {
        if let Some(&id) = self.inputs.get(&raw) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.inputs.insert(raw, id);
        id
    }

    fn lookup(&self, op: &Op, input_ids: &[u32]) -> Option<u32> {
        self.ops.get(&(op.clone(), input_ids.to_vec())).copied()
    }

    fn insert(&mut self, op: &Op, input_ids: Vec<u32>, outputs: Vec<ValueKey<Op>>) -> u32 {
        let first = self.keys.len() as u32;
        self.keys.extend(outputs);
        self.ops.insert((op.clone(), input_ids), first);
        first
    }
}

// ---------------------------------------------------------------------------------------------------
// Chains, primal recording and the derivative trace

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Mul,
    Svd3,
    Sin,
}

struct Primal {
    graph: Graph<Op>,
    value: f64,
    _scope: Scope,
}

struct DerivativeTrace {
    // field order is drop order: release the registrations, then free the graph's keys
    _scope: Scope,
    _keys: Vec<ValueKey<Op>>,
    _graph: Graph<Op>,
    value: f64,
    gradient: f64,
}

fn record(
    shape: Shape,
    depth: usize,
    x: f64,
    input: u32,
    interner: Option<&mut Interner>,
) -> Primal {
    let mut b = GraphBuilder::<Op>::new();
    let mut y = b.add_input(InputId(input));
    for _ in 0..depth {
        NODES_VISITED.fetch_add(1, Relaxed);
        y = match shape {
            Shape::Mul => {
                let yy = b.add_operation(
                    Op::new(OpKind::Mul),
                    vec![ValueRef::Local(y), ValueRef::Local(y)],
                    OperationRole::Primary,
                )[0];
                b.add_operation(
                    Op::scale(0.5),
                    vec![ValueRef::Local(yy)],
                    OperationRole::Primary,
                )[0]
            }
            Shape::Svd3 => {
                let usv = b.add_operation(
                    Op::new(OpKind::Svd),
                    vec![ValueRef::Local(y)],
                    OperationRole::Primary,
                );
                let refs = usv.iter().map(|&v| ValueRef::Local(v)).collect();
                b.add_operation(Op::new(OpKind::Recombine), refs, OperationRole::Primary)[0]
            }
            Shape::Sin => b.add_operation(
                Op::new(OpKind::Sin),
                vec![ValueRef::Local(y)],
                OperationRole::Primary,
            )[0],
        };
    }
    b.set_outputs(vec![y]);
    let graph = b.build();
    let value = compile_source(&graph).run(&[x])[0];
    let mut ids = Vec::new();
    if let Some(interner) = interner {
        // hash-cons every op of the recording
        for (v, node) in graph.values().iter().enumerate() {
            if node.producer.is_none() {
                ids.push(interner.input(&node.key, input));
            } else {
                ids.push(u32::MAX);
            }
            debug_assert_eq!(ids.len(), v + 1);
        }
        for node in graph.operations() {
            let in_ids: Vec<u32> = node
                .inputs
                .iter()
                .map(|r| {
                    if let ValueRef::Local(i) = r {
                        ids[*i]
                    } else {
                        unreachable!()
                    }
                })
                .collect();
            let outs: Vec<ValueKey<Op>> = node
                .outputs
                .iter()
                .map(|&o| graph.values()[o].key.clone())
                .collect();
            let first = match interner.lookup(&node.operation, &in_ids) {
                Some(first) => first,
                None => interner.insert(&node.operation, in_ids, outs),
            };
            for (k, &o) in node.outputs.iter().enumerate() {
                ids[o] = first + k as u32;
            }
        }
    }
    let scope = register(graph.values().iter().map(|v| &v.key));
    Primal {
        graph,
        value,
        _scope: scope,
    }
}

/// tenferro's `derivative_traces_from_frozen_program`: rebuild the derivative program as a graph with a
/// fresh builder and register every value. Without an interner every op gets a new `Arc`; with one,
/// ops already known (the forward replay) reuse the primal keys.
fn rebuild(
    der: &Program,
    primal: &Primal,
    input: u32,
    seed: u32,
    x: f64,
    mut interner: Option<&mut Interner>,
) -> DerivativeTrace {
    let mut b = GraphBuilder::<Op>::new();
    let mut refs: Vec<Option<ValueRef<Op>>> = vec![None; der.n_slots];
    let mut ids: Vec<u32> = vec![u32::MAX; der.n_slots];
    let xi = b.add_input(InputId(input));
    let si = b.add_input(InputId(seed));
    refs[0] = Some(ValueRef::Local(xi));
    refs[1] = Some(ValueRef::Local(si));
    if let Some(it) = interner.as_deref_mut() {
        ids[0] = it.input(b.global_key(xi), input);
        ids[1] = it.input(b.global_key(si), seed);
    }
    for instr in &der.instrs {
        NODES_VISITED.fetch_add(1, Relaxed);
        let inputs: Vec<ValueRef<Op>> = instr
            .inputs
            .iter()
            .map(|&s| refs[s].clone().unwrap())
            .collect();
        if let Some(it) = interner.as_deref_mut() {
            let in_ids: Vec<u32> = instr.inputs.iter().map(|&s| ids[s]).collect();
            if let Some(first) = it.lookup(&instr.op, &in_ids) {
                for (k, &o) in instr.outputs.iter().enumerate() {
                    ids[o] = first + k as u32;
                    refs[o] = Some(ValueRef::External(it.keys[ids[o] as usize].clone()));
                }
                continue;
            }
            let outs = b.add_operation(instr.op.clone(), inputs, OperationRole::Primary);
            let keys = outs.iter().map(|&o| b.global_key(o).clone()).collect();
            let first = it.insert(&instr.op, in_ids, keys);
            for (k, (&o, &local)) in instr.outputs.iter().zip(&outs).enumerate() {
                ids[o] = first + k as u32;
                refs[o] = Some(ValueRef::Local(local));
            }
        } else {
            let outs = b.add_operation(instr.op.clone(), inputs, OperationRole::Primary);
            for (&o, &local) in instr.outputs.iter().zip(&outs) {
                refs[o] = Some(ValueRef::Local(local));
            }
        }
    }
    let outputs: Vec<usize> = der
        .outputs
        .iter()
        .filter_map(|&o| match refs[o].as_ref().unwrap() {
            ValueRef::Local(l) => Some(*l),
            ValueRef::External(_) => None,
        })
        .collect();
    b.set_outputs(outputs);
    // every value of the derivative program, replayed ones included, gets its metadata registered
    let keys: Vec<ValueKey<Op>> = refs
        .iter()
        .map(|r| match r.as_ref().unwrap() {
            ValueRef::Local(l) => b.global_key(*l).clone(),
            ValueRef::External(k) => k.clone(),
        })
        .collect();
    let graph = b.build();
    let _ = primal; // the primal must be alive (its keys registered) for the collision to happen
    let scope = register(keys.iter());
    let out = der.run(&[x, 1.0]);
    DerivativeTrace {
        _scope: scope,
        _keys: keys,
        _graph: graph,
        value: out[0],
        gradient: out[1],
    }
}

// ---------------------------------------------------------------------------------------------------
// The measured phases (stable, non-inlined names for callgrind's --toggle-collect)

#[inline(never)]
fn phase_forward(
    shape: Shape,
    depth: usize,
    x: f64,
    input: u32,
    interner: Option<&mut Interner>,
) -> Primal {
    record(shape, depth, x, input, interner)
}

#[inline(never)]
fn phase_transform(
    primal: &Primal,
    input: u32,
    seed: u32,
    x: f64,
    interner: Option<&mut Interner>,
) -> DerivativeTrace {
    let src = compile_source(&primal.graph);
    let der = transform(&src);
    rebuild(&der, primal, input, seed, x, interner)
}

#[inline(never)]
fn phase_drop(trace: DerivativeTrace) {
    drop(trace);
}

/// One eager backward call: compile the source again, fingerprint it, look the derivative program up
/// in the cache (miss on call 0: transform), run it, rebuild + register the derivative trace, drop it.
#[inline(never)]
fn phase_backward(
    primal: &Primal,
    cache: &mut HashMap<u64, Program, Deterministic>,
    input: u32,
    seed: u32,
    x: f64,
    interner: Option<&mut Interner>,
) -> (f64, f64) {
    let src = compile_source(&primal.graph);
    let fp = fingerprint_program(&src);
    let der = cache.entry(fp).or_insert_with(|| transform(&src));
    let trace = rebuild(der, primal, input, seed, x, interner);
    let out = (trace.value, trace.gradient);
    drop(trace);
    out
}

// ---------------------------------------------------------------------------------------------------
// Output

#[derive(Clone, Copy, Default)]
struct Counts([u64; 4]);

impl Counts {
    fn now() -> Self {
        Counts([
            KEY_COMPARISONS.load(Relaxed),
            INPUT_KEY_COMPARISONS.load(Relaxed),
            METADATA_LOOKUPS.load(Relaxed),
            NODES_VISITED.load(Relaxed),
        ])
    }
    fn since(self, before: Counts) -> Counts {
        let mut c = Counts::default();
        for i in 0..4 {
            c.0[i] = self.0[i] - before.0[i];
        }
        c
    }
    fn json(&self) -> String {
        format!(
            "{{\"key_comparisons\": {}, \"input_key_comparisons\": {}, \"metadata_lookups\": {}, \"nodes_visited\": {}}}",
            self.0[0], self.0[1], self.0[2], self.0[3]
        )
    }
}

/// Run `f`, returning its result, seconds and counter deltas.
fn measured<T>(f: impl FnOnce() -> T) -> (T, f64, Counts) {
    let c0 = Counts::now();
    let t0 = Instant::now();
    let out = f();
    let secs = t0.elapsed().as_secs_f64();
    (out, secs, Counts::now().since(c0))
}

fn num(x: f64, no_clock: bool) -> String {
    if no_clock {
        "0".to_string()
    } else if x.is_finite() {
        format!("{:e}", x)
    } else {
        "null".to_string()
    }
}

fn list(xs: &[String]) -> String {
    format!("[{}]", xs.join(", "))
}

const USAGE: &str = "usage: adprof-native-probe KIND DEPTH [--mode traced|eager] [--calls K] [--x X] [--seconds-only]\n\
kinds: mul, svd3, sin, fixed (= interned mul), fixed-svd3, fixed-sin (traced by default; sin and fixed-sin eager)";

fn fail(msg: &str) -> ! {
    eprintln!("adprof-native-probe: {}\n{}", msg, USAGE);
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{}", USAGE);
        return;
    }
    if args.len() < 2 {
        fail("expected KIND and DEPTH");
    }
    let kind = args[0].as_str();
    let (shape, interned) = match kind {
        "mul" => (Shape::Mul, false),
        "svd3" => (Shape::Svd3, false),
        "sin" => (Shape::Sin, false),
        "fixed" | "fixed-mul" => (Shape::Mul, true),
        "fixed-svd3" => (Shape::Svd3, true),
        "fixed-sin" => (Shape::Sin, true),
        _ => fail(&format!("unknown kind {:?}", kind)),
    };
    let depth: usize = args[1].parse().unwrap_or_else(|_| {
        fail(&format!(
            "DEPTH must be a non-negative integer, got {:?}",
            args[1]
        ))
    });
    let mut mode = if shape == Shape::Sin {
        "eager"
    } else {
        "traced"
    }
    .to_string();
    let mut calls: usize = 6;
    let mut x: f64 = 0.7;
    let mut seconds_only = false;
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        if flag == "--seconds-only" {
            seconds_only = true;
            continue;
        }
        let value = rest
            .next()
            .unwrap_or_else(|| fail(&format!("{} needs a value", flag)));
        match flag.as_str() {
            "--mode" if value == "traced" || value == "eager" => mode = value.clone(),
            "--calls" => {
                calls = value
                    .parse()
                    .ok()
                    .filter(|&k| k >= 2)
                    .unwrap_or_else(|| fail("--calls needs an integer >= 2"))
            }
            "--x" => x = value.parse().unwrap_or_else(|_| fail("--x needs a number")),
            _ => fail(&format!("bad option {} {}", flag, value)),
        }
    }
    let no_clock = std::env::var("ADPROF_METRIC")
        .map(|m| m == "instructions")
        .unwrap_or(false);
    let mut interner = if interned {
        Some(Interner::default())
    } else {
        None
    };
    let head = format!(
        "\"kind\": \"{}\", \"depth\": {}, \"mode\": \"{}\"",
        kind, depth, mode
    );

    if mode == "traced" {
        let (primal, t_fwd, c_fwd) =
            measured(|| phase_forward(shape, depth, x, 0, interner.as_mut()));
        let (trace, t_tr, c_tr) = measured(|| phase_transform(&primal, 0, 1, x, interner.as_mut()));
        let (value, gradient) = (trace.value, trace.gradient);
        let (_, t_drop, c_drop) = measured(|| phase_drop(trace));
        assert_eq!(
            value.to_bits(),
            primal.value.to_bits(),
            "the replayed forward must reproduce the primal"
        );
        if seconds_only {
            println!(
                "{{\"transform_seconds\": {}, \"drop_seconds\": {}}}",
                num(t_tr, no_clock),
                num(t_drop, no_clock)
            );
            return;
        }
        println!(
            "{{{}, \"forward_seconds\": {}, \"transform_seconds\": {}, \"drop_seconds\": {}, \"counters\": {{\"forward\": {}, \"transform\": {}, \"drop\": {}}}, \"value\": {:e}, \"gradient\": {:e}, \"value_ops\": {}}}",
            head,
            num(t_fwd, no_clock),
            num(t_tr, no_clock),
            num(t_drop, no_clock),
            c_fwd.json(),
            c_tr.json(),
            c_drop.json(),
            value,
            gradient,
            primal.graph.operations().len()
        );
        return;
    }

    let mut cache: HashMap<u64, Program, Deterministic> = HashMap::default();
    let (mut t_fwd, mut c_fwd, mut t_bwd, mut c_bwd) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut value, mut gradient) = (0.0, 0.0);
    for call in 0..calls as u32 {
        // a fresh variable per call, as adprof's engine does; interned keys live for one call
        let input = 2 * call;
        let mut call_interner = if interned {
            Some(Interner::default())
        } else {
            None
        };
        let (primal, t, c) =
            measured(|| phase_forward(shape, depth, x, input, call_interner.as_mut()));
        t_fwd.push(num(t, no_clock));
        c_fwd.push(c.json());
        let ((v, g), t, c) = measured(|| {
            phase_backward(
                &primal,
                &mut cache,
                input,
                input + 1,
                x,
                call_interner.as_mut(),
            )
        });
        t_bwd.push(num(t, no_clock));
        c_bwd.push(c.json());
        value = v;
        gradient = g;
        drop(primal);
    }
    interner.take();
    if seconds_only {
        println!(
            "{{\"forward_seconds\": {}, \"backward_seconds\": {}}}",
            list(&t_fwd),
            list(&t_bwd)
        );
        return;
    }
    println!(
        "{{{}, \"calls\": {}, \"forward_seconds\": {}, \"backward_seconds\": {}, \"counters\": {{\"forward\": {}, \"backward\": {}}}, \"value\": {:e}, \"gradient\": {:e}}}",
        head,
        calls,
        list(&t_fwd),
        list(&t_bwd),
        list(&c_fwd),
        list(&c_bwd),
        value,
        gradient
    );
}
