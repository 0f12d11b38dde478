//! What the simulation views (2-D, MLP, side by side) share: a worker seen from its view
//! ([`Simulated`]: the handle and the snapshot a frame draws) and the transport the shell
//! drives through [`super::view::View::simulation`] (status line, step, pause when hidden,
//! play/pause/step/reset, run to a step). A view keeps only what differs: its preset, its
//! panels and what its speed and sign actions edit.

use super::view::{Action, simulation_status};
use super::worker::{Control, Message, WorkerHandle};
use crate::engine::BackendInfo;
use std::sync::Arc;

/// What a simulation worker's snapshot says for the status bar and the transport.
pub trait Progress {
    /// Steps done.
    fn step(&self) -> u32;
    /// Whether the worker is running.
    fn playing(&self) -> bool;
    /// Backend and device, once the engine has started.
    fn backend(&self) -> Option<&BackendInfo>;
    /// Throughput of the last ticks, and its unit (chain-steps/s, …).
    fn rate(&self) -> (f64, &'static str);
}

/// The transport of a simulation view's worker, whatever its snapshot: what the shell asks
/// through [`super::view::View::simulation`].
pub trait SimulationHandle {
    /// One line for the status bar: backend, step, speed.
    fn status(&self) -> String;
    /// Steps done at the snapshot of this frame.
    fn step(&self) -> u32;
    /// Whether the worker is running, at the snapshot of this frame.
    fn playing(&self) -> bool;
    /// Sends a transport action (play, pause, step, reset); false for the actions that edit
    /// the preset instead, which are the view's.
    fn transport(&self, action: Action) -> bool;
    /// Sends a transport message.
    fn control(&self, control: Control);
}

/// A simulation worker seen from its view: the handle, and the snapshot taken for this frame
/// (an `Arc` the worker published; taking it copies nothing).
pub struct Simulated<C, S> {
    session: WorkerHandle<Message<C>, S>,
    snapshot: Arc<S>,
}

impl<C: Send + 'static, S: Progress + Default + Send + Sync + 'static> Simulated<C, S> {
    /// A started worker; its snapshot is the default one until the first [`Self::refresh`].
    pub fn new(session: WorkerHandle<Message<C>, S>) -> Self {
        Self {
            session,
            snapshot: Arc::default(),
        }
    }

    /// The worker's handle (tests and tools wait on it).
    pub fn session(&self) -> &WorkerHandle<Message<C>, S> {
        &self.session
    }

    /// The snapshot of this frame.
    pub fn snapshot(&self) -> &Arc<S> {
        &self.snapshot
    }

    /// Takes the worker's latest snapshot for this frame.
    pub fn refresh(&mut self) {
        self.snapshot = self.session.snapshot();
    }

    /// Sends a view command.
    pub fn command(&self, command: C) {
        self.session.command(command);
    }
}

impl<C: Send + 'static, S: Progress + Default + Send + Sync + 'static> SimulationHandle
    for Simulated<C, S>
{
    fn status(&self) -> String {
        let s = &*self.snapshot;
        let (rate, unit) = s.rate();
        simulation_status(s.backend(), s.step(), s.playing(), rate, unit)
    }

    fn step(&self) -> u32 {
        self.snapshot.step()
    }

    fn playing(&self) -> bool {
        self.snapshot.playing()
    }

    fn transport(&self, action: Action) -> bool {
        let control = action.control(self.snapshot.playing());
        if let Some(control) = control {
            self.session.control(control);
        }
        control.is_some()
    }

    fn control(&self, control: Control) {
        self.session.control(control);
    }
}
