//! The worker threads behind the views. A worker owns an engine, advances it tick by tick
//! and publishes a snapshot for the UI; the UI thread never waits for it, so the controls stay
//! live however long a tick takes.
//!
//! [`WorkerHandle`] is the UI's end: messages go in through a channel, the latest snapshot
//! comes out as an `Arc` ([`Latest`]), and dropping the handle stops the thread. [`run`] is the loop
//! every simulation worker shares; a [`Simulation`] only says what a command, a reset and a
//! tick do. Every random number is a function of (seed, chain, step), so where the tick
//! boundaries fall does not change the chains.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A message type with a "stop the thread" value.
pub trait QuitCommand {
    /// The message that ends the worker's loop.
    fn quit() -> Self;
}

/// Paces a playing simulation to the frames the UI draws: a new tick waits until the UI has
/// taken the latest snapshot (or [`MAX_AHEAD`] has passed, so that a hidden or stalled
/// window does not stop the chains). On two cores without a GPU, an engine that ran ahead
/// took the cores the software rasteriser needed, for ticks nobody saw.
#[derive(Debug)]
pub struct Pacing {
    shown: std::sync::atomic::AtomicBool,
    published: Mutex<Instant>,
}

/// Longest a playing simulation waits for the UI to take its snapshot.
pub const MAX_AHEAD: Duration = Duration::from_millis(250);

impl Default for Pacing {
    fn default() -> Self {
        Self {
            shown: std::sync::atomic::AtomicBool::new(true),
            published: Mutex::new(Instant::now()),
        }
    }
}

impl Pacing {
    /// The UI took the snapshot.
    pub fn shown(&self) {
        self.shown.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// A new snapshot was published.
    fn published(&self) {
        self.shown
            .store(false, std::sync::atomic::Ordering::Relaxed);
        *self.published.lock().expect("pacing lock") = Instant::now();
    }

    /// Whether the next tick should wait for the UI.
    fn waiting(&self) -> bool {
        !self.shown.load(std::sync::atomic::Ordering::Relaxed)
            && self.published.lock().expect("pacing lock").elapsed() < MAX_AHEAD
    }
}

/// The latest snapshot of a worker, shared with the UI: the worker swaps in a new `Arc`
/// after every tick, and the UI takes the `Arc` (never a copy of the snapshot), so the lock
/// is held for a pointer swap at either end.
#[derive(Debug)]
pub struct Latest<S>(Mutex<Arc<S>>);

impl<S> Latest<S> {
    /// Shares `initial` until the worker publishes.
    pub fn new(initial: S) -> Self {
        Self(Mutex::new(Arc::new(initial)))
    }

    /// Replaces the snapshot; the previous one is freed once the UI lets go of it.
    pub fn publish(&self, snapshot: S) {
        let previous = std::mem::replace(
            &mut *self.0.lock().expect("snapshot lock"),
            Arc::new(snapshot),
        );
        drop(previous);
    }

    /// The latest snapshot.
    pub fn get(&self) -> Arc<S> {
        self.0.lock().expect("snapshot lock").clone()
    }

    /// Changes some fields of the latest snapshot (after a copy of it, when the UI still
    /// holds it): for workers that publish a few fields at a time.
    pub fn update(&self, change: impl FnOnce(&mut S))
    where
        S: Clone,
    {
        let mut next = S::clone(&self.get());
        change(&mut next);
        self.publish(next);
    }
}

/// Messages in, snapshots out.
pub struct WorkerHandle<C: QuitCommand, S> {
    commands: Sender<C>,
    latest: Arc<Latest<S>>,
    pacing: Arc<Pacing>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<C: QuitCommand + Send + 'static, S: Send + Sync + 'static> WorkerHandle<C, S> {
    /// Spawns thread `name` running `body` on the message channel and the shared snapshot,
    /// which starts as `initial`.
    pub fn spawn(
        name: &str,
        initial: S,
        body: impl FnOnce(Receiver<C>, Arc<Latest<S>>) + Send + 'static,
    ) -> Self {
        Self::spawn_paced(name, initial, move |rx, latest, _| body(rx, latest))
    }

    /// [`Self::spawn`] for a simulation paced to the UI's frames ([`Pacing`]).
    pub fn spawn_paced(
        name: &str,
        initial: S,
        body: impl FnOnce(Receiver<C>, Arc<Latest<S>>, Arc<Pacing>) + Send + 'static,
    ) -> Self {
        let (tx, rx) = channel();
        let latest = Arc::new(Latest::new(initial));
        let pacing = Arc::new(Pacing::default());
        let (worker_latest, worker_pacing) = (latest.clone(), pacing.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(rx, worker_latest, worker_pacing))
            .expect("spawn a worker thread");
        Self {
            commands: tx,
            latest,
            pacing,
            thread: Some(thread),
        }
    }

    /// Sends a message (ignored once the worker has stopped).
    pub fn send(&self, command: C) {
        let _ = self.commands.send(command);
    }

    /// The latest snapshot, taken by the UI for a frame (a paced simulation may tick again).
    pub fn snapshot(&self) -> Arc<S> {
        self.pacing.shown();
        self.latest.get()
    }

    /// Reads the latest snapshot without marking it shown.
    pub fn with_snapshot<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&self.latest.get())
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

/// The transport every simulation offers: play, pause, single ticks, run to a step, reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Run or pause.
    Play(bool),
    /// Advance one tick while paused.
    Step,
    /// Run until the step count reaches the value, then pause.
    RunTo(u32),
    /// Start the chains over with the current settings.
    Reset,
}

/// What a simulation worker receives: transport, a view-specific command, or quit.
#[derive(Clone, Debug)]
pub enum Message<C> {
    /// Transport.
    Control(Control),
    /// A command of the view (apply a preset, which histograms to bin, …).
    View(C),
    /// Stop the thread.
    Quit,
}

impl<C> QuitCommand for Message<C> {
    fn quit() -> Self {
        Message::Quit
    }
}

impl<C: Send + 'static, S: Send + Sync + 'static> WorkerHandle<Message<C>, S> {
    /// Sends a transport message.
    pub fn control(&self, control: Control) {
        self.send(Message::Control(control));
    }

    /// Sends a view command.
    pub fn command(&self, command: C) {
        self.send(Message::View(command));
    }
}

/// Play state of a worker: whether it runs, pending single ticks and a step to stop at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transport {
    /// Running (ticks follow each other) or paused.
    pub playing: bool,
    /// Single ticks asked for while paused.
    pending: u32,
    /// Run until this step, then pause.
    pub run_to: Option<u32>,
}

impl Transport {
    /// A transport, running or paused.
    pub fn new(playing: bool) -> Self {
        Self {
            playing,
            ..Self::default()
        }
    }

    /// Applies play, pause, step or run-to (reset is the simulation's).
    fn apply(&mut self, control: Control) {
        match control {
            Control::Play(on) => {
                self.playing = on;
                self.run_to = None;
            }
            Control::Step => self.pending += 1,
            Control::RunTo(step) => self.run_to = Some(step),
            Control::Reset => {}
        }
    }

    /// Whether a tick is due without waiting for a message.
    pub fn busy(&self) -> bool {
        self.playing || self.pending > 0 || self.run_to.is_some()
    }

    /// Steps of the next tick at step `step` with `per_tick` steps a tick: stops at the
    /// run-to step (and pauses there), consumes a single tick, or runs.
    pub fn steps(&mut self, step: u32, per_tick: u32) -> u32 {
        if let Some(target) = self.run_to {
            if step >= target {
                self.reached();
                return 0;
            }
            return per_tick.min(target - step);
        }
        if self.pending > 0 {
            self.pending -= 1;
            return per_tick;
        }
        if self.playing { per_tick } else { 0 }
    }

    /// Pauses when the run-to step has been reached at `step`; true when it just was.
    pub fn arrived(&mut self, step: u32) -> bool {
        let reached = self.run_to.is_some_and(|t| step >= t);
        if reached {
            self.reached();
        }
        reached
    }

    fn reached(&mut self) {
        self.run_to = None;
        self.playing = false;
    }

    /// Stops everything after a failure.
    pub fn halt(&mut self) {
        *self = Self::default();
    }
}

/// Shortest time between two ticks while running: the worker never outruns a 60 Hz display.
pub const MIN_TICK: Duration = Duration::from_millis(16);

/// A simulation driven by [`run`].
pub trait Simulation {
    /// The view's own commands.
    type Command;
    /// Applies a view command.
    fn command(&mut self, command: Self::Command);
    /// Starts the chains over with the current settings.
    fn reset(&mut self);
    /// The play state.
    fn transport(&mut self) -> &mut Transport;
    /// Steps of the next tick (0: nothing to do); a simulation may cut ticks short, e.g. to
    /// land on the step of its next evaluation.
    fn steps_this_tick(&mut self) -> u32;
    /// Advances `steps` steps (0 republishes after a change) and publishes a snapshot.
    fn tick(&mut self, steps: u32, changed: bool) -> anyhow::Result<()>;
    /// Reports a failed tick to the UI (the transport is already halted).
    fn fail(&mut self, message: String);
    /// Shortest time between two running ticks (slow motion raises it).
    fn tick_interval(&self) -> Duration {
        MIN_TICK
    }
}

/// How long an idle worker waits for a message before looking again.
const IDLE_WAIT: Duration = Duration::from_millis(250);

/// The loop of a simulation worker: wait for messages while idle (or until the next tick
/// while running), apply every queued message, tick, publish. Running ticks are paced by
/// [`Simulation::tick_interval`]; messages are handled at once even in slow motion.
pub fn run<S: Simulation>(sim: &mut S, rx: Receiver<Message<S::Command>>, pacing: &Pacing) {
    // Publish the initial state so the views have something to draw.
    if let Err(e) = sim.tick(0, true) {
        sim.transport().halt();
        sim.fail(format!("engine failed: {e:#}"));
    }
    // A busy transport that produced no tick (nothing to run) waits like an idle one.
    let mut stalled = false;
    let mut next_tick = Instant::now();
    loop {
        let busy = sim.transport().busy() && !stalled;
        // Playing (not running to a step for a picture): wait for the UI to show the latest
        // snapshot before computing the next.
        let t = *sim.transport();
        let held = t.playing && t.run_to.is_none() && pacing.waiting();
        let wait = if held {
            Duration::from_millis(2)
        } else if busy {
            next_tick.saturating_duration_since(Instant::now())
        } else {
            IDLE_WAIT
        };
        let first = if wait.is_zero() {
            rx.try_recv().ok()
        } else {
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        let mut changed = false;
        let mut next = first;
        while let Some(message) = next {
            changed = true;
            match message {
                Message::Control(Control::Reset) => sim.reset(),
                Message::Control(c) => sim.transport().apply(c),
                Message::View(c) => sim.command(c),
                Message::Quit => return,
            }
            next = rx.try_recv().ok();
        }
        // Single steps and runs to a step go at once; playing waits for its next tick.
        let t = *sim.transport();
        let held = t.playing && t.run_to.is_none() && pacing.waiting();
        let due = (Instant::now() >= next_tick && !held) || !t.playing || t.run_to.is_some();
        let steps = if due { sim.steps_this_tick() } else { 0 };
        stalled = due && steps == 0 && !changed;
        if steps > 0 || changed {
            let start = Instant::now();
            if let Err(e) = sim.tick(steps, changed) {
                sim.transport().halt();
                sim.fail(format!("engine failed: {e:#}"));
            }
            if steps > 0 {
                pacing.published();
            }
            if steps > 0 {
                next_tick = if sim.transport().run_to.is_some() {
                    Instant::now()
                } else {
                    start + sim.tick_interval()
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The UI keeps the snapshot it took while the worker publishes the next, and taking
    /// one copies nothing.
    #[test]
    fn a_published_snapshot_replaces_the_latest_and_leaves_a_held_one_alone() {
        let latest = Latest::new(vec![1]);
        let held = latest.get();
        latest.publish(vec![2]);
        assert_eq!(*held, [1]);
        assert_eq!(*latest.get(), [2]);
        latest.update(|v| v.push(3));
        assert_eq!(*latest.get(), [2, 3]);
        assert!(Arc::ptr_eq(&latest.get(), &latest.get()));
    }

    /// A playing simulation waits for the UI to take its snapshot, but never longer than
    /// MAX_AHEAD (a hidden window must not stop the chains).
    #[test]
    fn transport_runs_steps_and_stops_at_the_target() {
        let mut t = Transport::new(false);
        assert_eq!(t.steps(0, 5), 0);
        t.apply(Control::Step);
        assert_eq!(t.steps(0, 5), 5);
        assert_eq!(t.steps(5, 5), 0);
        t.apply(Control::RunTo(12));
        assert!(t.busy());
        assert_eq!(t.steps(5, 5), 5);
        assert_eq!(t.steps(10, 5), 2);
        assert_eq!(t.steps(12, 5), 0);
        assert!(!t.busy() && !t.playing);
        t.apply(Control::Play(true));
        assert_eq!(t.steps(12, 5), 5);
        t.apply(Control::RunTo(14));
        t.arrived(15);
        assert!(!t.playing && t.run_to.is_none());
    }
}

#[cfg(test)]
mod pacing_tests {
    use super::*;

    #[test]
    fn pacing_waits_for_the_ui_but_not_forever() {
        let p = Pacing::default();
        assert!(!p.waiting(), "nothing published yet");
        p.published();
        assert!(p.waiting());
        p.shown();
        assert!(!p.waiting());
        p.published();
        *p.published.lock().unwrap() = Instant::now() - MAX_AHEAD;
        assert!(!p.waiting(), "a stalled UI releases the engine");
    }
}
