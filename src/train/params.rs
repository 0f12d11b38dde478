//! A burn module's parameters as one flat vector, in the module's traversal order: the form
//! the optimisers of [`super::optimizer`] (and so the sampler core's formulas) work on.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};

fn to_vec<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .try_to_vec::<f32>()
        .expect("parameters are f32")
}

/// Where each parameter tensor sits in the flat vector, with its path in the module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// (path, offset, length) per tensor, in traversal order.
    pub tensors: Vec<(String, usize, usize)>,
}

impl Layout {
    /// Total number of parameters.
    pub fn len(&self) -> usize {
        self.tensors.last().map_or(0, |(_, o, n)| o + n)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ranges of the flat vector grouped by `key(path)` (consecutive tensors with the same
    /// key form one group), in order: the "layers" of the per-layer statistics.
    pub fn groups(&self, key: impl Fn(&str) -> String) -> Vec<(String, std::ops::Range<usize>)> {
        let mut out: Vec<(String, std::ops::Range<usize>)> = Vec::new();
        for (path, offset, len) in &self.tensors {
            let key = key(path);
            match out.last_mut() {
                Some((k, r)) if *k == key && r.end == *offset => r.end = offset + len,
                _ => out.push((key, *offset..offset + len)),
            }
        }
        out
    }
}

#[derive(Default)]
struct Flatten {
    path: Vec<String>,
    values: Vec<f32>,
    layout: Layout,
}

impl ModuleVisitor for Flatten {
    fn enter_module(&mut self, name: &str, _: &str) {
        self.path.push(name.to_owned());
    }
    fn exit_module(&mut self, _: &str, _: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v = to_vec(param.val());
        let path = self.path.join(".");
        self.layout.tensors.push((path, self.values.len(), v.len()));
        self.values.extend(v);
    }
}

/// The parameters of `module` as one vector, and where each tensor sits.
pub fn flatten<M: Module>(module: &M) -> (Vec<f32>, Layout) {
    let mut f = Flatten::default();
    module.visit(&mut f);
    (f.values, f.layout)
}

struct FlatGradients<'a> {
    grads: &'a GradientsParams,
    out: Vec<f32>,
}

impl ModuleVisitor for FlatGradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        match self.grads.get::<D>(param.id) {
            Some(g) => self.out.extend(to_vec(g)),
            // A parameter the loss does not depend on has gradient 0.
            None => {
                let n: usize = param.val().dims().iter().product();
                self.out.extend(std::iter::repeat_n(0.0, n));
            }
        }
    }
}

/// The gradients of `module`'s parameters, in the order of [`flatten`].
pub fn flat_gradients<M: Module>(module: &M, grads: &GradientsParams) -> Vec<f32> {
    let mut f = FlatGradients {
        grads,
        out: Vec::new(),
    };
    module.visit(&mut f);
    f.out
}

struct Unflatten<'a> {
    values: &'a [f32],
    at: usize,
    device: Device,
    track: bool,
}

impl ModuleMapper for Unflatten<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let id = param.id;
        let shape = param.val().shape();
        let n: usize = shape.iter().product();
        let data = TensorData::new(self.values[self.at..self.at + n].to_vec(), shape);
        self.at += n;
        let mut t = Tensor::<D>::from_data(data, &self.device);
        if self.track {
            t = t.require_grad();
        }
        Param::initialized(id, t)
    }
}

/// `module` with its parameters replaced by `values` (in the order of [`flatten`]) on
/// `device`, tracked for gradients when `track` (training) or not (evaluation).
pub fn unflatten<M: Module>(module: M, values: &[f32], device: &Device, track: bool) -> M {
    let mut u = Unflatten {
        values,
        at: 0,
        device: device.clone(),
        track,
    };
    let m = module.map(&mut u);
    assert_eq!(u.at, values.len(), "the values fit the module");
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::resnet::{ResNetConfig, ResNetPP};

    #[test]
    fn flatten_and_unflatten_round_trip() {
        let device = Device::flex();
        let config = ResNetConfig {
            depth: 8,
            width: 4,
            channels: 1,
            classes: 3,
        };
        let net = ResNetPP::new(&config, &device, 2);
        let (values, layout) = flatten(&net);
        assert_eq!(values.len(), layout.len());
        assert_eq!(layout.tensors[0].0, "stem.v");
        let groups = layout.groups(|p| p.split('.').next().unwrap_or(p).to_owned());
        let names: Vec<&str> = groups.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["stem", "blocks", "head_bias", "fc_v", "fc_g", "fc_b"]
        );
        assert_eq!(groups.last().unwrap().1.end, values.len());
        let shifted: Vec<f32> = values.iter().map(|v| v + 1.0).collect();
        let net = unflatten(net, &shifted, &device, false);
        assert_eq!(flatten(&net).0, shifted);
    }
}
