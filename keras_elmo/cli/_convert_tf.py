"""`keras-elmo convert --from-tfhub / --from-bilm-tf-checkpoint` inputs."""

import json
import logging
import os

logger = logging.getLogger(__name__)


class Extras:
    """What a TF source carries besides the biLM: a mix or a softmax."""

    def __init__(self, mix=None, softmax=None):
        self.mix = mix
        self.softmax = softmax

    def write(self, args):
        from keras_elmo.utils.atomic import atomic_write
        from keras_elmo.weights.tf_checkpoints import save_softmax_arrays

        if getattr(args, "to_mix", None):
            if self.mix is None:
                raise ValueError(
                    "`--to-mix` needs a TF Hub module with its learned mix "
                    "(--from-tfhub)."
                )
            with atomic_write(args.to_mix) as f:
                json.dump(self.mix, f, indent=2)
        if getattr(args, "to_softmax", None):
            if self.softmax is None:
                raise ValueError(
                    "`--to-softmax` needs a bilm-tf checkpoint holding "
                    "lm/softmax/W and lm/softmax/b (--from-bilm-tf-checkpoint)."
                )
            save_softmax_arrays(self.softmax, args.to_softmax)


def load_tf_source(args):
    """`(BiLM or None, Extras)` for --from-tfhub / --from-bilm-tf-checkpoint."""
    import keras_elmo
    from keras_elmo.models import bilm_io as checkpoint_bilm
    from keras_elmo.weights import tf_checkpoints as tfhub_checkpoint

    tfhub = getattr(args, "from_tfhub", None)
    bilm_tf = getattr(args, "from_bilm_tf_checkpoint", None)
    given = [f for f in (tfhub, bilm_tf, args.from_keras, args.weights) if f]
    if (tfhub or bilm_tf) and len(given) > 1:
        raise ValueError(
            "Give one input: --from-tfhub, --from-bilm-tf-checkpoint, "
            "--from-keras or --options/--weights; received several."
        )
    if tfhub:
        config, arrays, mix = tfhub_checkpoint.read_tfhub_module(
            tfhub, args.options
        )
        bilm = checkpoint_bilm.bilm_from_arrays(keras_elmo.BiLM, arrays, config)
        if mix is not None:
            logger.info("TF Hub mix: %s", mix)
        return bilm, Extras(mix=mix)
    if bilm_tf:
        options = args.options
        if options is None and os.path.isdir(bilm_tf):
            candidate = os.path.join(bilm_tf, "options.json")
            options = candidate if os.path.exists(candidate) else None
        bilm, softmax = checkpoint_bilm.bilm_from_bilm_tf_checkpoint(
            keras_elmo.BiLM, bilm_tf, options
        )
        return bilm, Extras(softmax=softmax)
    return None, Extras()
