//! The tasks beyond the machine: the task store called around it, and the changes that go
//! to and come from the other processes of the agent (see [`crate::store`]).

use std::collections::{BTreeMap, BTreeSet};

use super::{Endpoint, Event, Now};
use crate::machine::{list, Remote};
use crate::store::{Change, StoreError, TaskStore};
use crate::types::{GetTaskRequest, ListTasksRequest, ListTasksResponse, Task, TaskState};
use crate::{A2aError, ErrorKind};

impl Endpoint {
    /// Keeps the tasks in `store` as well as in the machine (see [`crate::store`]): every
    /// change saved, reads from the store, a task that does not run here loaded from it
    /// before it is continued, canceled or subscribed to.
    pub fn set_task_store(&mut self, store: Box<dyn TaskStore>) {
        self.task_store = Some(store);
        self.tasks.track_changes(true);
    }

    /// Gives every change of a task made here (a status, an artifact) to the adapter as
    /// [`Event::Announce`], for the other processes; off by default.
    pub fn announce_changes(&mut self, on: bool) {
        self.announce = on;
        self.tasks.track_changes(on || self.task_store.is_some());
    }

    /// How many times the task store failed (a save, a flush or a load).
    pub fn store_errors(&self) -> u64 {
        self.store_errors
    }

    /// A change another process made (from a [`Fanout`](crate::store::Fanout)): applied to
    /// the copy of its task held here, for the streams watching it here; when the copy
    /// missed changes, the task is loaded again from the store. A terminal status (a
    /// cancel) stops the task's run here.
    pub fn handle_remote(&mut self, now: Now, change: &Change) {
        if self.tasks.handle_remote(now.utc, change) == Remote::Gap {
            // A failed load leaves the copy as it was; the next change tries again.
            let _ = self.refresh(&change.task_id);
        }
        self.drain(now);
    }

    /// Changes from other processes may have been lost (the connection to them broke):
    /// every task streams watch here and that does not run here is loaded again.
    pub fn resync(&mut self, now: Now) {
        for id in self.tasks.watched_elsewhere() {
            let _ = self.refresh(&id);
        }
        self.drain(now);
    }

    /// Saves what the machine changed, flushes the store once, and queues the
    /// announcements (after the save: a process that missed one loads the task as saved).
    pub(super) fn persist(&mut self) {
        let mut changed = Vec::new();
        let mut seen = BTreeSet::new();
        let mut announced = Vec::new();
        while let Some(change) = self.tasks.poll_change() {
            if seen.insert(change.task_id.clone()) {
                changed.push(change.task_id.clone());
            }
            if self.announce && change.event.is_some() {
                announced.push(change);
            }
        }
        if let Some(store) = &mut self.task_store {
            for id in &changed {
                if let (Some(task), Some(version)) = (self.tasks.task(id), self.tasks.version(id)) {
                    if store.save(version, &task).is_err() {
                        self.store_errors += 1;
                    }
                }
            }
            // Every turn, changes or not: a store may hold saves a failed flush kept.
            if store.flush().is_err() {
                self.store_errors += 1;
            }
        }
        for change in announced {
            self.events.push_back(Event::Announce(Box::new(change)));
        }
    }

    /// With a store, hands the machine task `id` as the store has it, unless it runs here
    /// or is terminal here already.
    pub(super) fn refresh(&mut self, id: &str) -> Result<(), A2aError> {
        let Some(store) = &mut self.task_store else {
            return Ok(());
        };
        // What runs here is newest here; a terminal task changes no more.
        if self.tasks.runs_here(id) || self.tasks.state(id).is_some_and(TaskState::is_terminal) {
            return Ok(());
        }
        match store.load(id) {
            Ok(Some((version, task))) if task.id == id => {
                self.tasks.adopt(version, task)?;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => {
                self.store_errors += 1;
                Err(store_failed(&e))
            }
        }
    }

    /// `GetTask`, from the store when there is one (and the task does not run here).
    pub(super) fn get_task(&mut self, request: &GetTaskRequest) -> Result<Task, A2aError> {
        self.refresh(&request.id)?;
        self.tasks.get_task(request)
    }

    /// `ListTasks`: the machine's tasks, or with a store every task it keeps (those that
    /// run here as the machine has them).
    pub(super) fn list_tasks(
        &mut self,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        let Some(store) = &mut self.task_store else {
            return self.tasks.list_tasks(request);
        };
        let mut all = BTreeMap::new();
        let listed = store.list(&mut |task| {
            all.insert(task.id.clone(), task);
        });
        if let Err(e) = listed {
            self.store_errors += 1;
            return Err(store_failed(&e));
        }
        for id in self.tasks.task_ids() {
            if self.tasks.runs_here(id) || !all.contains_key(id) {
                if let Some(task) = self.tasks.task(id) {
                    all.insert(id.to_owned(), task);
                }
            }
        }
        let mut ordered: Vec<&Task> = all.values().collect();
        ordered.sort_unstable_by(|a, b| list::key(b).cmp(&list::key(a)));
        list::page(ordered.into_iter(), request)
    }
}

fn store_failed(e: &StoreError) -> A2aError {
    A2aError::new(ErrorKind::Internal, format!("the task store failed: {e}"))
}
