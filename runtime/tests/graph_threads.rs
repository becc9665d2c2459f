//! The lazy graph's MLIR contexts outlive the threads that used them and
//! serve later threads (a test binary of its own: the count of contexts
//! made is the process's, and other tests' threads would take some).

use jitc_interp::{Scalar, Tensor};
use jitc_runtime::graph::{self, Var};

/// Compiles and runs a fetch on a new thread, and joins it.
fn fetch_in_a_thread(n: usize) {
    std::thread::spawn(move || {
        let x = Var::new(Tensor::splat(vec![n], Scalar::F32(1.5)));
        let y = x.binary("mul", &x).unwrap();
        assert_eq!(y.fetch().unwrap().get(n - 1), Scalar::F32(2.25));
        // A staged function holds its context too, until dropped.
        let staged = graph::stage(&[&x], &[&x.binary("add", &x).unwrap()], &Default::default()).unwrap();
        drop(staged);
    })
    .join()
    .unwrap();
}

#[test]
fn threads_that_come_and_go_reuse_their_contexts() {
    fetch_in_a_thread(4);
    let made = graph::contexts_made();
    assert!(made >= 1);
    for n in 1..=20 {
        fetch_in_a_thread(n);
    }
    assert_eq!(graph::contexts_made(), made, "a thread made a context of its own");
    // Two threads at once need two.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let x = Var::new(Tensor::splat(vec![2], Scalar::F32(1.0)));
        x.binary("add", &x).unwrap().fetch().unwrap();
        ready_tx.send(()).unwrap();
        done_rx.recv().unwrap();
    });
    ready_rx.recv().unwrap();
    fetch_in_a_thread(3);
    done_tx.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(graph::contexts_made(), made + 1);
}
