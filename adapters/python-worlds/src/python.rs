//! The `mosaic_worlds._native` module: [`World`] for Python, its results as Python lists,
//! tuples and bytes (the Python package turns them into numpy arrays and spaces).
//!
//! The workspace forbids unsafe code, and that holds here too: PyO3's macros expand to
//! code that passes `unsafe_code = "forbid"`, so the crate needs no exception.

use crate::world::{World, WorldError, world_names};
use mosaic_core::{EnvError, Frame, ObsRequest, Outcome, Stepping};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

impl From<WorldError> for PyErr {
    fn from(err: WorldError) -> Self {
        let message = err.to_string();
        match err {
            WorldError::Env {
                source: EnvError::InvalidAction { .. },
                ..
            }
            | WorldError::SettingsNotAnObject { .. }
            | WorldError::Spec { .. }
            | WorldError::NoSuchAgent { .. }
            | WorldError::ActionCount { .. } => PyValueError::new_err(message),
            WorldError::Env { .. } | WorldError::NotReset { .. } => {
                PyRuntimeError::new_err(message)
            }
        }
    }
}

/// Little-endian `f32` bytes, what `numpy.frombuffer(..., "<f4")` reads.
fn f32_bytes<'py>(py: Python<'py>, values: &[f32]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    PyBytes::new(py, &bytes)
}

/// A picture as `(height, width, rgb bytes)`, the order of a numpy image's shape.
fn picture<'py>(py: Python<'py>, frame: &Frame) -> (u32, u32, Bound<'py, PyBytes>) {
    (frame.height, frame.width, PyBytes::new(py, &frame.rgb))
}

/// What `step` answers: rewards, terminated and truncated flags per agent, events as JSON.
type StepResult = (Vec<f32>, Vec<bool>, Vec<bool>, String);

/// One native world: `World(name, settings_json)`.
#[pyclass(name = "World", module = "mosaic_worlds._native", unsendable)]
struct PyWorld {
    world: World,
}

#[pymethods]
impl PyWorld {
    /// Builds the world `name` with its settings as a JSON object (an experiment's
    /// `env_settings`).
    #[new]
    fn new(name: &str, settings_json: &str) -> PyResult<Self> {
        Ok(Self {
            world: World::from_json(name, settings_json)?,
        })
    }

    /// The registered name.
    #[getter]
    fn name(&self) -> String {
        self.world.spec().name.clone()
    }

    /// Agent ids in index order.
    #[getter]
    fn agents(&self) -> Vec<String> {
        self.world
            .spec()
            .agents
            .iter()
            .map(|a| a.id.clone())
            .collect()
    }

    /// Each agent's team, `None` in games without teams.
    #[getter]
    fn teams(&self) -> Vec<Option<String>> {
        self.world
            .spec()
            .agents
            .iter()
            .map(|a| a.team.clone())
            .collect()
    }

    /// One label per discrete action.
    #[getter]
    fn action_labels(&self) -> Vec<String> {
        self.world.spec().action_labels.clone()
    }

    /// `"single"`, `"sequential"` (one agent acts per step) or `"simultaneous"`.
    #[getter]
    fn stepping(&self) -> &'static str {
        match self.world.spec().stepping {
            Stepping::Single => "single",
            Stepping::Sequential => "sequential",
            Stepping::Simultaneous => "simultaneous",
        }
    }

    /// The world's own step limit, if any.
    #[getter]
    fn max_steps(&self) -> Option<u32> {
        self.world.spec().max_steps
    }

    /// The shape of the symbolic observation, if the world has one.
    #[getter]
    fn symbolic_shape(&self) -> Option<Vec<usize>> {
        self.world.spec().symbolic_shape.clone()
    }

    /// Steps since the last reset.
    #[getter]
    fn steps(&self) -> u32 {
        self.world.steps()
    }

    /// Starts the episode of seed `seed` (the episode seed of `mosaic run`).
    fn reset(&mut self, seed: u64) -> PyResult<()> {
        Ok(self.world.reset(seed)?)
    }

    /// The indices of the agents that must act now.
    fn acting(&self) -> Vec<usize> {
        self.world.acting()
    }

    /// `agent`'s symbolic observation (little-endian `f32` bytes, empty when the world has
    /// none), its legal-action mask, and its extra information as JSON (or `None`).
    fn observe<'py>(
        &self,
        py: Python<'py>,
        agent: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<bool>, Option<String>)> {
        let obs = self.world.observe(agent, ObsRequest::SYMBOLIC)?;
        let data = obs.symbolic.map(|t| t.data).unwrap_or_default();
        let info = obs.info.map(|info| info.to_string());
        Ok((f32_bytes(py, &data), obs.legal, info))
    }

    /// `agent`'s text view (what language models read), `None` when the world writes none.
    fn text(&self, agent: usize) -> PyResult<Option<String>> {
        let want = ObsRequest {
            text: true,
            ..ObsRequest::MASK_ONLY
        };
        Ok(self.world.observe(agent, want)?.text)
    }

    /// `agent`'s own view as `(height, width, rgb bytes)`, `None` when the world draws none.
    fn view<'py>(
        &self,
        py: Python<'py>,
        agent: usize,
    ) -> PyResult<Option<(u32, u32, Bound<'py, PyBytes>)>> {
        let want = ObsRequest {
            frame: true,
            ..ObsRequest::MASK_ONLY
        };
        let obs = self.world.observe(agent, want)?;
        Ok(obs.frame.map(|frame| picture(py, &frame)))
    }

    /// Advances one step with one entry per agent (`None` for agents not acting); answers
    /// the rewards, terminated and truncated flags per agent and the step's events as JSON.
    fn step(&mut self, actions: Vec<Option<u32>>) -> PyResult<StepResult> {
        let out = self.world.step(&actions)?;
        let events = serde_json::to_string(&out.events)
            .map_err(|e| PyRuntimeError::new_err(format!("events: {e}")))?;
        Ok((
            out.rewards.clone(),
            out.terminated.clone(),
            out.truncated.clone(),
            events,
        ))
    }

    /// The whole world as `(height, width, rgb bytes)`, `None` when the world draws none.
    fn render<'py>(&self, py: Python<'py>) -> Option<(u32, u32, Bound<'py, PyBytes>)> {
        self.world.render().map(|frame| picture(py, &frame))
    }

    /// `"win"`, `"draw"` or `"loss"` per agent once the episode is over, else `None`.
    fn outcome(&self) -> Option<Vec<&'static str>> {
        self.world.outcome().map(|outcomes| {
            outcomes
                .into_iter()
                .map(|o| match o {
                    Outcome::Win => "win",
                    Outcome::Draw => "draw",
                    Outcome::Loss => "loss",
                })
                .collect()
        })
    }

    /// The episode's metrics as JSON.
    fn metrics(&self) -> String {
        serde_json::Value::Object(self.world.metrics()).to_string()
    }
}

/// The worlds `World` can build, in `mosaic envs` order.
#[pyfunction(name = "world_names")]
fn names() -> Vec<&'static str> {
    world_names()
}

/// mosaic's native worlds, stepped from Python.
#[pymodule(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyWorld>()?;
    module.add_function(wrap_pyfunction!(names, module)?)?;
    Ok(())
}
