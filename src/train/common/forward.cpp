#include "train/common/forward.h"

#include "model/qwen3_5.h"

namespace musacoder::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What a checkpointed layer needs again in backward; kept in the autograd context as a capsule. The layer
// belongs to the Decoder, which outlives every graph built from it. cos/sin/mask never need gradients, so
// they travel here rather than as Function inputs (mask is undefined under plain causal attention, and an
// undefined tensor cannot be an autograd input).
struct LayerCall : torch::CustomClassHolder {
  LayerCall(model::DecoderLayerImpl* l, TrainingForward::LayerHook h, int64_t i, torch::Tensor c,
            torch::Tensor s, torch::Tensor m)
      : layer(l), hook(std::move(h)), index(i), cos(std::move(c)), sin(std::move(s)), mask(std::move(m)) {}
  model::DecoderLayerImpl* layer;
  TrainingForward::LayerHook hook;
  int64_t index;
  torch::Tensor cos, sin, mask;
  torch::Tensor run(const torch::Tensor& x) const {
    if (hook) hook(index);
    return layer->forward(x, cos, sin, mask, nullptr, nullptr, 0);
  }
};

class CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               c10::intrusive_ptr<LayerCall> call) {
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      y = call->run(x);
    }
    ctx->save_for_backward({x});
    ctx->saved_data["call"] = c10::IValue::make_capsule(std::move(call));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto saved = ctx->get_saved_variables();
    c10::intrusive_ptr<torch::CustomClassHolder> capsule = ctx->saved_data["call"].toCapsule();
    const auto* call = static_cast<const LayerCall*>(capsule.get());
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      y = call->run(x);
    }
    torch::autograd::backward({y}, {grad_output[0]});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

void use_fused_ops(model::Decoder& decoder, bool fused) {
  for (const auto& m : decoder->modules(/*include_self=*/false)) {
    if (auto* norm = dynamic_cast<model::RMSNormImpl*>(m.get())) norm->fused = fused;
    if (auto* mlp = dynamic_cast<model::MlpImpl*>(m.get())) mlp->fused = fused;
    if (auto* mlp = dynamic_cast<model::Qwen35MlpImpl*>(m.get())) mlp->fused = fused;
  }
}

torch::Tensor TrainingForward::hidden(model::Decoder& decoder, const model::ForwardInput& in, bool checkpoint,
                                      const LayerHook& before_layer) const {
  torch::Tensor mask, positions = in.position_ids;
  if (in.sequence_ids.defined()) {
    mask = model::packed_attention_mask(in.sequence_ids, decoder->output_weight().scalar_type());
    if (!positions.defined()) positions = model::packed_position_ids(in.sequence_ids);
  }
  if (!positions.defined()) {
    const int64_t B = in.input_ids.size(0), T = in.input_ids.size(1);
    positions = torch::arange(T, in.input_ids.options()).unsqueeze(0).expand({B, T});
  }
  torch::Tensor h = decoder->model->embed_tokens(in.input_ids);
  if (h.is_cuda()) use_fused_ops(decoder, true);
  // A checkpointed layer whose input needs no grad would get no backward at all (frozen embeddings under LoRA):
  // make the input a leaf that requires grad (transformers' enable_input_require_grads).
  if (checkpoint && torch::GradMode::is_enabled() && !h.requires_grad()) h = h.detach().requires_grad_(true);
  auto [cos, sin] = rope_.cos_sin(positions, h.scalar_type());
  torch::nn::ModuleList layers = decoder->model->layers;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    auto call = c10::make_intrusive<LayerCall>(layers[i]->as<model::DecoderLayerImpl>(), before_layer,
                                               static_cast<int64_t>(i), cos, sin, mask);
    const bool ckpt = checkpoint && torch::GradMode::is_enabled();
    h = ckpt ? CheckpointedLayer::apply(h, call) : call->run(h);
  }
  return decoder->model->norm(h);
}

}  // namespace musacoder::train
