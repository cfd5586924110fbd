// `fthost generate`: option parsing, the three prompt modes (--prompt, --prompts, --chat),
// answers streamed as they come, and the tokens/s summary on stderr.
#include "generate/generate_command.h"

#include "generate/generation_setup.h"
#include "generate/prompt_file.h"
#include "generate/token_generator.h"
#include "generate/token_sampler.h"
#include "plugin_host/plugin_loader.h"
#include "train/thread_settings.h"

#include <ft/errors.h>
#include <ft/log.h>

#include <boost/program_options.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace fthost {

namespace {

struct GenerateOptions {
  GenerationSource source;
  std::vector<std::string> plugin_dirs;
  std::string prompt;
  bool has_prompt = false;
  std::string prompts_file;
  bool chat = false;
  std::int64_t max_new_tokens = 256;
  SamplingSettings sampling;
  std::uint64_t seed = 0;
  std::vector<std::int64_t> stop_tokens;
  bool kv_cache = true;
  int threads = 0;
};

po::options_description generate_options() {
  po::options_description o(
      "Usage:\n"
      "  fthost generate --checkpoint DIR (--prompt TEXT | --prompts FILE.jsonl | --chat) [options]\n"
      "  fthost generate --config run.toml [--checkpoint DIR] (...) [key=value ...]\n\n"
      "Generates text with a Hugging Face model directory (a finetuned epoch_N/ or a base model: its\n"
      "config.json, safetensors weights and tokenizer.json), or with the model, tokenizer and\n"
      "checkpointer a run configuration names. Greedy unless --temperature is set. Answers stream to\n"
      "stdout; tokens/s go to stderr (docs/generate.md).\n\n"
      "Options");
  o.add_options()("help,h", "show this help")("checkpoint", po::value<std::string>(),
                                              "Hugging Face model directory to load")(
      "config,c", po::value<std::string>(), "run configuration naming [model], [checkpointer], [tokenizer]")(
      "prompt,p", po::value<std::string>(), "one prompt (text)")(
      "prompts", po::value<std::string>(),
      "JSON Lines: {\"prompt\": text} | {\"messages\": [...]} | {\"tokens\": [ids]}, optional \"expected\"")(
      "chat", po::bool_switch(),
      "apply the tokenizer's chat format; without --prompt/--prompts: a conversation on stdin")(
      "max-new-tokens,n", po::value<std::int64_t>()->default_value(256), "most tokens per answer")(
      "temperature,t", po::value<double>()->default_value(0.0), "0: greedy; above: sample at this temperature")(
      "top-k", po::value<std::int64_t>()->default_value(0), "sample among the k most likely tokens (0: all)")(
      "top-p", po::value<double>()->default_value(1.0), "sample within the top-p probability mass (1: all)")(
      "seed", po::value<std::uint64_t>()->default_value(0), "sampling seed")(
      "stop-token", po::value<std::vector<std::int64_t>>()->composing(),
      "another id that ends an answer (repeatable); the tokenizer's EOS/end-of-turn ids always do")(
      "no-kv-cache", po::bool_switch(), "recompute the whole sequence for every token (slow; for checking)")(
      "dtype", po::value<std::string>(), "fp32 or bf16 (default: the config's, else fp32)")(
      "device", po::value<std::string>(), "cpu, cuda or cuda:N (default: the config's, else cpu)")(
      "threads", po::value<int>()->default_value(0), "CPU threads (0: every core)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing(), "extra plugin directory or library");
  return o;
}

GenerateOptions parse_options(const po::variables_map& vm) {
  GenerateOptions o;
  if (vm.count("checkpoint")) o.source.checkpoint_dir = vm["checkpoint"].as<std::string>();
  if (vm.count("config")) o.source.config_path = vm["config"].as<std::string>();
  if (vm.count("overrides")) o.source.overrides = vm["overrides"].as<std::vector<std::string>>();
  if (vm.count("dtype")) o.source.dtype = vm["dtype"].as<std::string>();
  if (vm.count("device")) o.source.device = vm["device"].as<std::string>();
  if (vm.count("plugin-dir")) o.plugin_dirs = vm["plugin-dir"].as<std::vector<std::string>>();
  o.has_prompt = vm.count("prompt") > 0;
  if (o.has_prompt) o.prompt = vm["prompt"].as<std::string>();
  if (vm.count("prompts")) o.prompts_file = vm["prompts"].as<std::string>();
  o.chat = vm["chat"].as<bool>();
  o.max_new_tokens = vm["max-new-tokens"].as<std::int64_t>();
  o.sampling.temperature = vm["temperature"].as<double>();
  o.sampling.top_k = vm["top-k"].as<std::int64_t>();
  o.sampling.top_p = vm["top-p"].as<double>();
  o.seed = vm["seed"].as<std::uint64_t>();
  if (vm.count("stop-token")) o.stop_tokens = vm["stop-token"].as<std::vector<std::int64_t>>();
  o.kv_cache = !vm["no-kv-cache"].as<bool>();
  o.threads = vm["threads"].as<int>();
  if (o.has_prompt && !o.prompts_file.empty()) throw ft::Error("give --prompt or --prompts, not both");
  if (!o.has_prompt && o.prompts_file.empty() && !o.chat)
    throw ft::Error("nothing to generate for: give --prompt TEXT, --prompts FILE.jsonl or --chat");
  TokenSampler(o.sampling, o.seed);  // checks the sampling options before anything loads
  if (o.max_new_tokens < 1) throw ft::Error("--max-new-tokens: must be at least 1");
  if (o.threads < 0) throw ft::Error("--threads: must be 0 (every core) or positive");
  return o;
}

// Prints an answer as its tokens come: the text decoded so far, held back while it ends inside
// a character whose bytes have not all arrived (decoded as U+FFFD); token ids without a tokenizer.
class AnswerPrinter {
 public:
  AnswerPrinter(const ft::Tokenizer* tokenizer, std::ostream& out) : tokenizer_(tokenizer), out_(out) {}

  void add(std::int64_t token) {
    ids_.push_back(token);
    if (!tokenizer_) {
      out_ << (ids_.size() == 1 ? "" : " ") << token << std::flush;
      return;
    }
    const std::string text = tokenizer_->decode(ids_);
    static const std::string replacement = "\xEF\xBF\xBD";
    if (text.size() >= replacement.size() && text.compare(text.size() - replacement.size(), 3, replacement) == 0)
      return;
    if (text.compare(0, printed_.size(), printed_) != 0) return;  // an earlier piece decoded differently: at finish
    out_ << text.substr(printed_.size()) << std::flush;
    printed_ = text;
  }

  // Whatever is still held back.
  void finish() {
    if (!tokenizer_) return;
    const std::string text = tokenizer_->decode(ids_);
    if (text.compare(0, printed_.size(), printed_) == 0) {
      out_ << text.substr(printed_.size());
    } else {
      out_ << "\n" << text;  // the stream diverged from the whole decode: show the whole answer
    }
    printed_ = text;
  }

 private:
  const ft::Tokenizer* tokenizer_;
  std::ostream& out_;
  std::vector<std::int64_t> ids_;
  std::string printed_;
};

struct Totals {
  std::int64_t answers = 0, prompt_tokens = 0, steps = 0, decode_steps = 0;
  double prefill_seconds = 0, decode_seconds = 0;

  void add(const Generation& g) {
    ++answers;
    prompt_tokens += g.prompt_tokens;
    steps += g.steps;
    decode_steps += std::max<std::int64_t>(g.steps - 1, 0);
    prefill_seconds += g.prefill_seconds;
    decode_seconds += g.decode_seconds;
  }
};

class GenerateSession {
 public:
  GenerateSession(const GenerateOptions& options, GenerationComponents components)
      : o_(options), c_(std::move(components)), sampler_(o_.sampling, o_.seed) {
    if (c_.tokenizer) limits_.stop_tokens = c_.tokenizer->stop_tokens();
    for (const auto& ids : {c_.config_stop_tokens, o_.stop_tokens})
      for (std::int64_t id : ids)
        if (std::find(limits_.stop_tokens.begin(), limits_.stop_tokens.end(), id) == limits_.stop_tokens.end())
          limits_.stop_tokens.push_back(id);
    if (limits_.stop_tokens.empty())
      ft::log::warn(
          "no stop tokens (no tokenizer, no eos_token_id, no --stop-token): every answer runs to "
          "--max-new-tokens");
  }

  // One answer, streamed to stdout.
  std::vector<std::int64_t> answer(const std::vector<std::int64_t>& prompt) {
    const std::int64_t model_limit = c_.model->max_seq_len();
    const auto prompt_length = static_cast<std::int64_t>(prompt.size());
    if (model_limit > 0 && prompt_length >= model_limit)
      throw ft::Error("the prompt's " + std::to_string(prompt_length) +
                      " tokens leave no room to answer: the model "
                      "takes at most " +
                      std::to_string(model_limit) + " (max_seq_len)");
    std::int64_t length = prompt_length + o_.max_new_tokens;
    if (model_limit > 0) length = std::min(length, model_limit);
    // Sized for this answer: the cache holds the prompt and the answer, not the model's whole context.
    NextTokenLogits logits(*c_.model, o_.kv_cache, length);
    AnswerPrinter printer(c_.tokenizer.get(), std::cout);
    const Generation g = generate(logits, prompt, sampler_, limits_, [&](std::int64_t token) { printer.add(token); });
    printer.finish();
    totals_.add(g);
    return g.tokens;
  }

  std::string text_of(const std::vector<std::int64_t>& ids) const {
    return c_.tokenizer ? c_.tokenizer->decode(ids) : ids_text(ids);
  }
  const ft::Tokenizer* tokenizer() const { return c_.tokenizer.get(); }

  void report() const {
    std::cout << std::flush;  // the answers first, then the summary on stderr
    const double seconds = totals_.prefill_seconds + totals_.decode_seconds;
    std::fprintf(stderr,
                 "generate: %lld new tokens in %.3f s, %.1f tokens/s (%lld prompt tokens to the first token: %.3f s; "
                 "then %.1f tokens/s), %s\n",
                 static_cast<long long>(totals_.steps), seconds, seconds > 0 ? totals_.steps / seconds : 0.0,
                 static_cast<long long>(totals_.prompt_tokens), totals_.prefill_seconds,
                 totals_.decode_seconds > 0 ? totals_.decode_steps / totals_.decode_seconds : 0.0,
                 o_.kv_cache ? "KV cache" : "no KV cache (the whole sequence recomputed per token)");
  }

 private:
  const GenerateOptions& o_;
  GenerationComponents c_;
  TokenSampler sampler_;
  GenerationLimits limits_{o_.max_new_tokens, {}};
  Totals totals_;
};

void run_prompt_file(GenerateSession& session, const GenerateOptions& o) {
  const std::vector<Prompt> prompts = read_prompt_file(o.prompts_file, session.tokenizer(), o.chat);
  std::int64_t checked = 0, matched = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const Prompt& p = prompts[i];
    const std::string indent(std::to_string(i + 1).size() + 3, ' ');
    std::cout << "[" << i + 1 << "] prompt:   " << p.shown << "\n";
    if (p.expected_text) std::cout << indent << "expected: " << *p.expected_text << "\n";
    if (p.expected_tokens) std::cout << indent << "expected: " << ids_text(*p.expected_tokens) << "\n";
    std::cout << indent << "answer:   " << std::flush;
    const std::vector<std::int64_t> answer = session.answer(p.tokens);
    const std::optional<bool> match = answer_matches(p, answer, session.tokenizer());
    if (match) {
      ++checked;
      matched += *match ? 1 : 0;
      std::cout << (*match ? "   [as expected]" : "   [differs]");
    }
    std::cout << "\n";
  }
  if (checked > 0)
    std::cout << "answers as expected: " << matched << " of " << checked << " (" << (100 * matched / checked) << "%)\n";
}

// A conversation on stdin, one user turn a line; "/reset" starts over, an empty input ends it.
void run_chat(GenerateSession& session) {
  if (!session.tokenizer()) text_prompt_tokens(nullptr, "", true);  // the error: no tokenizer
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  if (terminal) std::cerr << "chat: one message a line; /reset starts over; Ctrl-D ends\n";
  std::vector<ft::Message> history;
  std::string line;
  for (;;) {
    if (terminal) std::cout << "user> " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line == "/reset") {
      history.clear();
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ft::Message user;
    user.role = "user";
    user.content = line;
    history.push_back(user);
    if (terminal) std::cout << "assistant> " << std::flush;
    const std::vector<std::int64_t> answer = session.answer(conversation_tokens(*session.tokenizer(), history));
    std::cout << "\n";
    ft::Message reply;
    reply.role = "assistant";
    reply.content = session.text_of(answer);
    history.push_back(reply);
  }
  if (terminal) std::cout << "\n";
}

int run(const GenerateOptions& o) {
  apply_thread_settings(o.threads);
  PluginLoader loader;
  loader.load_all(PluginLoader::search_paths(o.plugin_dirs, {}));
  const auto doc = generation_config(o.source, loader.registry());
  const ft::ConfigNode root = ft::detail::root_node(doc);
  GenerationComponents components = build_generation_components(loader.registry(), root, o.source.checkpoint_dir);
  ft::log::info("generate: {}{}", components.weights,
                components.tokenizer ? "" : "; no tokenizer: prompts and answers are token ids");
  GenerateSession session(o, std::move(components));
  if (!o.prompts_file.empty()) {
    run_prompt_file(session, o);
  } else if (o.has_prompt) {
    session.answer(text_prompt_tokens(session.tokenizer(), o.prompt, o.chat));
    std::cout << "\n";
  } else {
    run_chat(session);
  }
  session.report();
  return 0;
}

}  // namespace

int generate_main(int argc, char** argv) {
  const po::options_description visible = generate_options();
  po::options_description all;
  all.add(visible).add_options()("overrides", po::value<std::vector<std::string>>(), "");
  po::positional_options_description positional;
  positional.add("overrides", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "fthost generate: " << e.what() << "\n" << visible << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return 0;
  }
  try {
    return run(parse_options(vm));
  } catch (const ft::Error& e) {
    std::cout << std::flush;
    std::cerr << "fthost generate: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << "fthost generate: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace fthost
