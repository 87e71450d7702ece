"""The ELMo character vocabulary, identical to AllenNLP and bilm-tf.

Raw ids are the UTF-8 bytes 0..255 of a token plus five specials; every id
is then shifted by +1 so that id 0 is free to mean "no token" (padding).
A token occupies `MAX_CHARS_PER_TOKEN` = 50 slots:
`[BOW, byte_0, ..., byte_47, EOW, PAD, ...]` (at most 48 bytes are kept; the
cut is byte-level and may split a multi-byte character, as in AllenNLP).
"""

import numpy as np

MAX_CHARS_PER_TOKEN = 50
MAX_TOKEN_BYTES = MAX_CHARS_PER_TOKEN - 2  # room for BOW and EOW

# Raw ids (before the +1 shift), as in bilm-tf's UnicodeCharsVocabulary.
BOS_CHAR = 256  # beginning of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # beginning of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a token's 50 slots

# The +1 shift: id 0 marks a padding token (an all-zero row).
ID_OFFSET = 1

# Rows of the character embedding: 261 shifted ids plus the padding row 0.
NUM_CHARACTERS = PAD_CHAR + ID_OFFSET + 1  # 262
# Inference option files say 262, training option files (no +1) say 261.
ACCEPTED_N_CHARACTERS = (NUM_CHARACTERS - 1, NUM_CHARACTERS)


# The literal sentence boundary tokens (bilm-tf vocabulary spelling).
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _boundary_token(char):
    ids = np.full([MAX_CHARS_PER_TOKEN], PAD_CHAR, dtype=np.int32)
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return ids + ID_OFFSET


# Shifted char ids of the sentence boundary tokens `<S>` and `</S>`.
BOS_TOKEN_IDS = _boundary_token(BOS_CHAR)
EOS_TOKEN_IDS = _boundary_token(EOS_CHAR)
