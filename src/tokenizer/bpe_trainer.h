// Byte-level BPE training: a corpus of texts in, a complete tokenizer.json (Hugging Face format) out, for
// models trained from scratch (`musacoder quickstart`). The pipeline is Qwen2's: NFC, the Qwen2 split regex
// (Isolated), ByteLevel(add_prefix_space=false, use_regex=false), ByteLevel decoder. Words are counted with
// the Normalizer and PreTokenizer built from the very JSON that is emitted, so training sees exactly the
// pre-tokens that Tokenizer::encode will produce.
//
// Ids: special tokens 0..S-1 (in options order; also added_tokens, special, normalized=false), then the
// 256 byte symbols ordered by code point (the tokenizers library's order), then one id per merge whose
// result is a new string, in merge order. Each step merges the adjacent pair with the highest count
// (occurrences weighted by word frequency); ties go to the smallest (left id, right id), the tokenizers
// library's rule, so with cut_special_tokens=false the merges equal its BpeTrainer's
// (initial_alphabet=ByteLevel.alphabet(), same vocab_size / special tokens / min_frequency). Training
// stops when the vocabulary (specials included) reaches vocab_size or the best pair occurs fewer than
// max(min_frequency, 1) times. Pair counts are updated incrementally through a pair -> words index
// and a lazy max-heap; nothing recounts the corpus per merge.
// Deterministic: the same texts and options give byte-identical JSON.
// Thread-safety: a pure function; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::tokenizer {

struct BpeTrainerOptions {
  // Final vocabulary size, special tokens and the 256 byte symbols included; at least 256 + specials.
  int32_t vocab_size = 2048;
  // Non-empty, distinct, valid UTF-8; none may equal a byte symbol. Ids 0.. in this order.
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  // A pair is merged only when it occurs at least this often (>= 0; 0 and 1 both mean "occurs at all").
  int64_t min_frequency = 2;
  // true: special tokens written in the texts are cut out before counting (Tokenizer::encode always maps
  // them to their own id, so merges over their characters would be wasted). false: they are counted as
  // plain text, as the tokenizers library's trainer does.
  bool cut_special_tokens = true;
};

// The tokenizer.json text that Tokenizer::from_json_text and the tokenizers library both load.
// kInvalidArgument for vocab_size < 256 + specials, a bad special token, negative min_frequency, a text
// that is not valid UTF-8, or a corpus with no pre-tokens (no texts, or only empty ones / only specials).
Result<std::string> train_bpe_tokenizer_json(const std::vector<std::string>& texts,
                                             const BpeTrainerOptions& options = {});

}  // namespace musacoder::tokenizer
