"""Which builtin-option fields the loader parses, per options table (explicit, no introspection).

Each entry is ``(key, accessor, kind)``: ``key`` is the snake_case name kernels read from ``op.options``; ``kind``
says how the raw value is converted (``activation`` and ``padding`` become names like ``"RELU6"``/``"SAME"``,
``type`` becomes a tensor-type name, ``vector`` a tuple of ints, ``string`` a str, None when absent). Option tables
not listed here load as ``{}``.
"""

from __future__ import annotations

ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
PADDINGS = {0: "SAME", 1: "VALID"}

#: Defaults that differ from the flatbuffer zero default (what the TF converter writes).
OPTION_DEFAULTS = {"stride_w": 1, "stride_h": 1, "dilation_w_factor": 1, "dilation_h_factor": 1,
                   "depth_multiplier": 1, "beta": 1.0, "filter_width": 1, "filter_height": 1}
#: Ops for which the converter writes an (empty) options table.
EMPTY_OPTIONS = {"PAD": "PadOptions", "PADV2": "PadV2Options", "TRANSPOSE": "TransposeOptions",
                 "EXPAND_DIMS": "ExpandDimsOptions", "SLICE": "SliceOptions", "HARD_SWISH": "HardSwishOptions",
                 "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
                 "QUANTIZE": "QuantizeOptions", "DEQUANTIZE": "DequantizeOptions", "PRELU": None,
                 "RELU": None, "RELU6": None, "LOGISTIC": None, "TANH": None}

_ACT = ("fused_activation_function", "FusedActivationFunction", "activation")
_PAD = ("padding", "Padding", "padding")
_STRIDES = (("stride_w", "StrideW", "int"), ("stride_h", "StrideH", "int"))
_DIL = (("dilation_w_factor", "DilationWFactor", "int"), ("dilation_h_factor", "DilationHFactor", "int"))

OPTION_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "Conv2DOptions": (_PAD, *_STRIDES, _ACT, *_DIL, ("quantized_bias_type", "QuantizedBiasType", "int")),
    "DepthwiseConv2DOptions": (_PAD, *_STRIDES, ("depth_multiplier", "DepthMultiplier", "int"), _ACT, *_DIL),
    "FullyConnectedOptions": (_ACT, ("weights_format", "WeightsFormat", "int"),
                              ("keep_num_dims", "KeepNumDims", "bool"),
                              ("asymmetric_quantize_inputs", "AsymmetricQuantizeInputs", "bool"),
                              ("quantized_bias_type", "QuantizedBiasType", "int")),
    "TransposeConvOptions": (_PAD, *_STRIDES, _ACT, ("quantized_bias_type", "QuantizedBiasType", "int")),
    "Pool2DOptions": (_PAD, *_STRIDES, ("filter_width", "FilterWidth", "int"),
                      ("filter_height", "FilterHeight", "int"), _ACT),
    "AddOptions": (_ACT, ("pot_scale_int16", "PotScaleInt16", "bool")),
    "SubOptions": (_ACT, ("pot_scale_int16", "PotScaleInt16", "bool")),
    "MulOptions": (_ACT,),
    "DivOptions": (_ACT,),
    "SoftmaxOptions": (("beta", "Beta", "float"),),
    "LeakyReluOptions": (("alpha", "Alpha", "float"),),
    "ReducerOptions": (("keep_dims", "KeepDims", "bool"),),
    "ReshapeOptions": (("new_shape", "NewShape", "vector"),),
    "SqueezeOptions": (("squeeze_dims", "SqueezeDims", "vector"),),
    "ShapeOptions": (("out_type", "OutType", "type"),),
    "PackOptions": (("values_count", "ValuesCount", "int"), ("axis", "Axis", "int")),
    "UnpackOptions": (("num", "Num", "int"), ("axis", "Axis", "int")),
    "SplitOptions": (("num_splits", "NumSplits", "int"),),
    "SplitVOptions": (("num_splits", "NumSplits", "int"),),
    "ConcatenationOptions": (("axis", "Axis", "int"), _ACT),
    "StridedSliceOptions": (("begin_mask", "BeginMask", "int"), ("end_mask", "EndMask", "int"),
                            ("ellipsis_mask", "EllipsisMask", "int"), ("new_axis_mask", "NewAxisMask", "int"),
                            ("shrink_axis_mask", "ShrinkAxisMask", "int"), ("offset", "Offset", "bool")),
    "GatherOptions": (("axis", "Axis", "int"), ("batch_dims", "BatchDims", "int")),
    "ArgMaxOptions": (("output_type", "OutputType", "type"),),
    "ArgMinOptions": (("output_type", "OutputType", "type"),),
    "ResizeNearestNeighborOptions": (("align_corners", "AlignCorners", "bool"),
                                     ("half_pixel_centers", "HalfPixelCenters", "bool")),
    "ResizeBilinearOptions": (("align_corners", "AlignCorners", "bool"),
                              ("half_pixel_centers", "HalfPixelCenters", "bool")),
    "SVDFOptions": (("rank", "Rank", "int"), _ACT,
                    ("asymmetric_quantize_inputs", "AsymmetricQuantizeInputs", "bool")),
    "UnidirectionalSequenceLSTMOptions": (_ACT, ("cell_clip", "CellClip", "float"),
                                          ("proj_clip", "ProjClip", "float"), ("time_major", "TimeMajor", "bool"),
                                          ("asymmetric_quantize_inputs", "AsymmetricQuantizeInputs", "bool"),
                                          ("diagonal_recurrent_tensors", "DiagonalRecurrentTensors", "bool")),
    "IfOptions": (("then_subgraph_index", "ThenSubgraphIndex", "int"),
                  ("else_subgraph_index", "ElseSubgraphIndex", "int")),
    "WhileOptions": (("cond_subgraph_index", "CondSubgraphIndex", "int"),
                     ("body_subgraph_index", "BodySubgraphIndex", "int")),
    "CallOnceOptions": (("init_subgraph_index", "InitSubgraphIndex", "int"),),
    "DepthToSpaceOptions": (("block_size", "BlockSize", "int"),),
    "SpaceToDepthOptions": (("block_size", "BlockSize", "int"),),
    "L2NormOptions": (_ACT,),
    "MirrorPadOptions": (("mode", "Mode", "int"),),
    "BatchMatMulOptions": (("adj_x", "AdjX", "bool"), ("adj_y", "AdjY", "bool"),
                           ("asymmetric_quantize_inputs", "AsymmetricQuantizeInputs", "bool")),
    "CumsumOptions": (("exclusive", "Exclusive", "bool"), ("reverse", "Reverse", "bool")),
    "CastOptions": (("in_data_type", "InDataType", "type"), ("out_data_type", "OutDataType", "type")),
    "VarHandleOptions": (("container", "Container", "string"), ("shared_name", "SharedName", "string")),
}

#: Builtin op -> the options table its Parse function reads (for every op whose table is listed above). The loader
#: requires that table (or none, then the schema defaults); ModelBuilder writes it.
OP_OPTIONS: dict[str, str] = {
    "CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions", "TRANSPOSE_CONV": "TransposeConvOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
    "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
    "SOFTMAX": "SoftmaxOptions", "LEAKY_RELU": "LeakyReluOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions", "REDUCE_PROD": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "RESHAPE": "ReshapeOptions", "SQUEEZE": "SqueezeOptions", "SHAPE": "ShapeOptions",
    "PACK": "PackOptions", "UNPACK": "UnpackOptions", "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions",
    "CONCATENATION": "ConcatenationOptions", "STRIDED_SLICE": "StridedSliceOptions",
    "GATHER": "GatherOptions", "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions", "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "SVDF": "SVDFOptions", "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "IF": "IfOptions", "WHILE": "WhileOptions", "CALL_ONCE": "CallOnceOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "L2_NORMALIZATION": "L2NormOptions", "MIRROR_PAD": "MirrorPadOptions", "BATCH_MATMUL": "BatchMatMulOptions",
    "CUMSUM": "CumsumOptions", "CAST": "CastOptions", "VAR_HANDLE": "VarHandleOptions",
}

#: Options naming the subgraphs a control-flow op runs, in the order TFLM marks them.
SUBGRAPH_OPTION_FIELDS: dict[str, tuple[str, ...]] = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}
