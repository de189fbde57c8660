#pragma once
// vkf-make-checkpoint --family jina-bert: the encoder families' options and writer, apart from
// the decoders' (vkf_make_checkpoint.cpp hands the command line over when it names one).

namespace vkf::app {

// Whether argv names an encoder family (--family jina-bert or --family=jina-bert).
bool names_encoder_family(int argc, char** argv);

// vkf-make-checkpoint's main() for encoder families: its own options (--help lists them),
// the same exit codes.
int make_encoder_checkpoint_main(int argc, char** argv);

}  // namespace vkf::app
