//! The UI's handle on a worker thread: commands go in through a channel, the latest snapshot
//! comes out through a mutex, and dropping the handle stops the thread. The 2-D view's
//! [`super::session::Session`] and the MLP view's [`super::mlp::session::MlpSession`] are
//! both this handle.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

/// A command type with a "stop the thread" value.
pub trait QuitCommand {
    /// The command that ends the worker's loop.
    fn quit() -> Self;
}

/// Commands in, snapshots out.
pub struct WorkerHandle<C: QuitCommand, S> {
    commands: Sender<C>,
    shared: Arc<Mutex<S>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<C: QuitCommand + Send + 'static, S: Clone + Send + 'static> WorkerHandle<C, S> {
    /// Spawns thread `name` running `body` on the command channel and the shared snapshot,
    /// which starts as `initial`.
    pub fn spawn(
        name: &str,
        initial: S,
        body: impl FnOnce(Receiver<C>, Arc<Mutex<S>>) + Send + 'static,
    ) -> Self {
        let (tx, rx) = channel();
        let shared = Arc::new(Mutex::new(initial));
        let worker_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(rx, worker_shared))
            .expect("spawn a worker thread");
        Self {
            commands: tx,
            shared,
            thread: Some(thread),
        }
    }

    /// Sends a command (ignored once the worker has stopped).
    pub fn send(&self, command: C) {
        let _ = self.commands.send(command);
    }

    /// A copy of the latest snapshot.
    pub fn snapshot(&self) -> S {
        self.shared.lock().expect("snapshot lock").clone()
    }

    /// Reads the latest snapshot without copying it.
    pub fn with_snapshot<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&self.shared.lock().expect("snapshot lock"))
    }
}

impl<C: QuitCommand, S> Drop for WorkerHandle<C, S> {
    fn drop(&mut self) {
        let _ = self.commands.send(C::quit());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
