"""The ops TFLM ships a kernel for, and the ``MicroMutableOpResolver`` method that adds each: what a firmware's op
resolver can hold (:mod:`microinterp.deploy` writes it; :mod:`microinterp.targets` refuses the others).

Builtin ops by their schema name, TFLM's own custom ops (the signal library, the detection post-processing, Ethos-U)
by their custom code.
"""

from __future__ import annotations

#: TFLM op (builtin name or custom code) -> its MicroMutableOpResolver method.
RESOLVER_METHODS = {
    "ABS": "AddAbs", "ADD": "AddAdd", "ADD_N": "AddAddN", "ARG_MAX": "AddArgMax", "ARG_MIN": "AddArgMin",
    "ASSIGN_VARIABLE": "AddAssignVariable", "AVERAGE_POOL_2D": "AddAveragePool2D", "BATCH_MATMUL": "AddBatchMatMul",
    "BATCH_TO_SPACE_ND": "AddBatchToSpaceNd", "BROADCAST_ARGS": "AddBroadcastArgs", "BROADCAST_TO": "AddBroadcastTo",
    "CALL_ONCE": "AddCallOnce", "CAST": "AddCast", "CEIL": "AddCeil", "CIRCULAR_BUFFER": "AddCircularBuffer",
    "CONCATENATION": "AddConcatenation", "CONV_2D": "AddConv2D", "COS": "AddCos", "CUMSUM": "AddCumSum",
    "CUSTOM": "AddBuiltin", "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D", "DEPTH_TO_SPACE": "AddDepthToSpace",
    "DEQUANTIZE": "AddDequantize", "DIV": "AddDiv", "DYNAMIC_UPDATE_SLICE": "AddDynamicUpdateSlice", "ELU": "AddElu",
    "EMBEDDING_LOOKUP": "AddEmbeddingLookup", "EQUAL": "AddEqual", "EXP": "AddExp", "EXPAND_DIMS": "AddExpandDims",
    "FILL": "AddFill", "FLOOR": "AddFloor", "FLOOR_DIV": "AddFloorDiv", "FLOOR_MOD": "AddFloorMod",
    "FULLY_CONNECTED": "AddFullyConnected", "GATHER": "AddGather", "GATHER_ND": "AddGatherNd",
    "GREATER": "AddGreater", "GREATER_EQUAL": "AddGreaterEqual", "HARD_SWISH": "AddHardSwish", "IF": "AddIf",
    "L2_NORMALIZATION": "AddL2Normalization", "L2_POOL_2D": "AddL2Pool2D", "LEAKY_RELU": "AddLeakyRelu",
    "LESS": "AddLess", "LESS_EQUAL": "AddLessEqual", "LOG": "AddLog", "LOGICAL_AND": "AddLogicalAnd",
    "LOGICAL_NOT": "AddLogicalNot", "LOGICAL_OR": "AddLogicalOr", "LOGISTIC": "AddLogistic",
    "LOG_SOFTMAX": "AddLogSoftmax", "MAXIMUM": "AddMaximum", "MAX_POOL_2D": "AddMaxPool2D", "MEAN": "AddMean",
    "MINIMUM": "AddMinimum", "MIRROR_PAD": "AddMirrorPad", "MUL": "AddMul", "NEG": "AddNeg",
    "NOT_EQUAL": "AddNotEqual", "PACK": "AddPack", "PAD": "AddPad", "PADV2": "AddPadV2", "PRELU": "AddPrelu",
    "QUANTIZE": "AddQuantize", "READ_VARIABLE": "AddReadVariable", "REDUCE_ALL": "AddReduceAll",
    "REDUCE_MAX": "AddReduceMax", "REDUCE_MIN": "AddReduceMin", "RELU": "AddRelu", "RELU6": "AddRelu6",
    "RESHAPE": "AddReshape", "RESIZE_BILINEAR": "AddResizeBilinear",
    "RESIZE_NEAREST_NEIGHBOR": "AddResizeNearestNeighbor", "REVERSE_V2": "AddReverseV2", "ROUND": "AddRound",
    "RSQRT": "AddRsqrt", "SELECT_V2": "AddSelectV2", "SHAPE": "AddShape", "SIN": "AddSin", "SLICE": "AddSlice",
    "SOFTMAX": "AddSoftmax", "SPACE_TO_BATCH_ND": "AddSpaceToBatchNd", "SPACE_TO_DEPTH": "AddSpaceToDepth",
    "SPLIT": "AddSplit", "SPLIT_V": "AddSplitV", "SQRT": "AddSqrt", "SQUARE": "AddSquare",
    "SQUARED_DIFFERENCE": "AddSquaredDifference", "SQUEEZE": "AddSqueeze", "STRIDED_SLICE": "AddStridedSlice",
    "SUB": "AddSub", "SUM": "AddSum", "SVDF": "AddSvdf", "SignalDelay": "AddDelay", "SignalEnergy": "AddEnergy",
    "SignalFftAutoScale": "AddFftAutoScale", "SignalFilterBank": "AddFilterBank",
    "SignalFilterBankLog": "AddFilterBankLog",
    "SignalFilterBankSpectralSubtraction": "AddFilterBankSpectralSubtraction",
    "SignalFilterBankSquareRoot": "AddFilterBankSquareRoot", "SignalFramer": "AddFramer", "SignalIrfft": "AddIrfft",
    "SignalOverlapAdd": "AddOverlapAdd", "SignalPCAN": "AddPCAN", "SignalRfft": "AddRfft",
    "SignalStacker": "AddStacker", "SignalWindow": "AddWindow", "TANH": "AddTanh", "TFLM_DECODE": "AddDecode",
    "ethos-u": "AddEthosU",
    "TFLite_Detection_PostProcess": "AddDetectionPostprocess", "TRANSPOSE": "AddTranspose",
    "TRANSPOSE_CONV": "AddTransposeConv", "UNIDIRECTIONAL_SEQUENCE_LSTM": "AddUnidirectionalSequenceLSTM",
    "UNPACK": "AddUnpack", "VAR_HANDLE": "AddVarHandle", "WHILE": "AddWhile", "ZEROS_LIKE": "AddZerosLike",
}

#: Ops TFLM registers that run on an accelerator, not the CPU: op -> what would run it. A board without that
#: accelerator cannot run the model (a Vela-compiled model on a Cortex-M alone), whatever its memory.
ACCELERATOR_OPS = {
    "ethos-u": "an Arm Ethos-U NPU (the op is a Vela-compiled command stream; deploy the model from before Vela "
               "on a board without one)",
}
