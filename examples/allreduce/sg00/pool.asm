PSEUDO_DMA_TRIGGER q_gradient_in block_id=0;
PSEUDO_DMA_TRIGGER $S[22]>0 q_gradient_out block_id=0;
EVENT_SEMAPHORE $S[11]>0;
