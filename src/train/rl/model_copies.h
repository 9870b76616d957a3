// The frozen reference policy and the MirrorPop mirror: copies of the policy's weights in separate Decoders
// (no gradients), and the mirror's EMA update  mirror ← decay·mirror + (1 − decay)·policy  (rl::ema_update's
// formula; on CPU float32 tensors rl::ema_update itself runs over the raw spans).
#pragma once

#include <torch/torch.h>

#include "core/status.h"
#include "model/decoder.h"

namespace musacoder::train::rl {

// A Decoder with `source`'s config and a copy of its parameters and buffers on `device` (source's dtype);
// requires_grad off, eval mode.
model::Decoder clone_decoder(model::Decoder& source, const torch::Device& device);

// Parameter-wise EMA of `mirror` towards `policy` (same architecture; devices may differ).
Status ema_update_model(model::Decoder& mirror, model::Decoder& policy, double decay);

}  // namespace musacoder::train::rl
