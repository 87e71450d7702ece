"""Calls a TF Serving model server over gRPC (optional example).

    pip install tensorflow-serving-api   # optional, not a keras-elmo dependency
    python savedmodel/requests/grpc_client.py --host localhost:8500 \\
        "The cat sat on the mat ." "Hello world !"

Sends the sentences to the `tokens` signature (whitespace-split here, so
the request shows both inputs) and prints the shape of `elmo` and the
first values of `default`. `output_filter` asks the server for only the
outputs you need: the per-token layers are large.

`tensorflow-serving-api` pins a TensorFlow version; install it in its own
virtual environment if that clashes with the TensorFlow keras-elmo uses.
Tests never import this file.
"""

import argparse
import sys


def make_request(sentences, model_name="elmo", outputs=("elmo", "default")):
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    tokens = [sentence.split() for sentence in sentences]
    steps = max((len(t) for t in tokens), default=0)
    padded = [t + [""] * (steps - len(t)) for t in tokens]
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = "tokens"
    request.inputs["tokens"].CopyFrom(
        tf.make_tensor_proto(
            padded, dtype=tf.string, shape=[len(padded), steps]
        )
    )
    request.inputs["sequence_len"].CopyFrom(
        tf.make_tensor_proto([len(t) for t in tokens], dtype=tf.int32)
    )
    request.output_filter.extend(outputs)
    return request


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sentences", nargs="+")
    parser.add_argument("--host", default="localhost:8500")
    parser.add_argument("--model-name", default="elmo")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    try:
        import grpc
        import tensorflow as tf
        from tensorflow_serving.apis import prediction_service_pb2_grpc
    except ImportError as e:
        sys.exit(
            f"{e}: this example needs `pip install tensorflow-serving-api`."
        )
    channel = grpc.insecure_channel(args.host)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = make_request(args.sentences, args.model_name)
    response = stub.Predict(request, timeout=args.timeout)
    elmo = tf.make_ndarray(response.outputs["elmo"])
    mean = tf.make_ndarray(response.outputs["default"])
    print(f"elmo: {elmo.shape} {elmo.dtype}")
    for sentence, vector in zip(args.sentences, mean):
        print(f"{sentence!r}: default[:4] = {vector[:4]}")


if __name__ == "__main__":
    main()
