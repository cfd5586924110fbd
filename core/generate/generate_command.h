// `fthost generate`: text from a finetuned checkpoint or a base model, through the same model,
// tokenizer and checkpointer plugins as training (docs/generate.md).
#pragma once

namespace fthost {

// Runs `fthost generate` with the arguments after "generate"; the process's exit code. Prints
// its own errors.
int generate_main(int argc, char** argv);

}  // namespace fthost
